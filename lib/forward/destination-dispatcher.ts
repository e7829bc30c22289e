import { isIPv6 } from 'node:net'
import { Agent, type buildConnector } from 'undici'
import { connectToDestination, type DestinationConnectorSettings } from '../security/destination-connector'
import { canonicalHost } from '../security/canonical-host'
import { ProxyError } from '../diagnostics/proxy-error'

/**
 * Creates the undici Agent that carries forwarded requests. Every new connection goes through
 * `connectToDestination`, so the destination's addresses are resolved and checked against the
 * policy on every connect (not only when the request arrived) and only a checked address is
 * dialed. Connections are kept alive and reused per origin.
 */
export function createDestinationDispatcher (connector: DestinationConnectorSettings, httpActivityTimeout: number): Agent {
  const connect: buildConnector.connector = (options, callback) => {
    // undici hands IPv6 literals over without their brackets.
    const host = canonicalHost(isIPv6(options.hostname) ? `[${options.hostname}]` : options.hostname)
    const port = Number(options.port === '' ? 80 : options.port)
    if (host === null || options.protocol !== 'http:') {
      callback(new ProxyError('proxy_internal_error', 'The proxy built an invalid destination.'), null)
      return
    }
    connectToDestination({ host, port }, connector).then(
      (socket) => callback(null, socket),
      (error: Error) => callback(error, null)
    )
  }
  return new Agent({
    connect,
    headersTimeout: httpActivityTimeout,
    // Body inactivity is timed by the forwarder, which knows whether the body is an event stream.
    bodyTimeout: 0,
    keepAliveTimeout: 4_000,
    maxHeaderSize: 64 * 1024
  })
}
