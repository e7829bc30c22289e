import { isIP, isIPv6, type Socket } from 'node:net'
import { checkServerIdentity, connect as tlsConnect, type DetailedPeerCertificate, type TLSSocket } from 'node:tls'
import { Agent, type buildConnector } from 'undici'
import type { ForwardProxyDestination } from '../../types/destination'
import { connectToDestination, type DestinationConnectorSettings } from '../security/destination-connector'
import { canonicalHost } from '../security/canonical-host'
import { ProxyError } from '../diagnostics/proxy-error'
import type { DestinationTlsSettings } from './destination-tls-settings'
import { certificateProblem, tlsHandshakeError } from './tls-errors'

/**
 * Creates the undici Agent that carries requests to `https://` destinations (requests inside
 * intercepted tunnels). Every new connection is resolved, checked against
 * the policy and dialed by `connectToDestination`, then TLS runs over that socket: SNI is the
 * host name (none for IP literals), ALPN offers only `http/1.1`, and the certificate is judged
 * by `tlsSettings()` before undici may write a byte. DNS, TCP and the handshake share one
 * `connectTimeout`; a stalled handshake is 504 `connection_timeout`.
 *
 * `tlsSettings` is read on every connect, so the tlsInterception plugin can set it after this
 * Agent exists.
 */
export function createTlsDestinationDispatcher (
  connector: DestinationConnectorSettings,
  tlsSettings: () => DestinationTlsSettings,
  httpActivityTimeout: number
): Agent {
  const connect: buildConnector.connector = (options, callback) => {
    // undici hands IPv6 literals over without their brackets.
    const host = canonicalHost(isIPv6(options.hostname) ? `[${options.hostname}]` : options.hostname)
    const port = Number(options.port === '' ? 443 : options.port)
    if (host === null || options.protocol !== 'https:') {
      callback(new ProxyError('proxy_internal_error', 'The proxy built an invalid destination.'), null)
      return
    }
    connectTls({ host, port }, connector, tlsSettings()).then(
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

/**
 * Dials `destination` through the policy-checking connector and runs a validated TLS handshake
 * over the socket. Resolves with a socket whose certificate was accepted; throws a ProxyError
 * (`tls_certificate_error`, `tls_protocol_error`, `connection_timeout`, or what the connector threw).
 */
export async function connectTls (
  destination: ForwardProxyDestination,
  connector: DestinationConnectorSettings,
  settings: DestinationTlsSettings
): Promise<TLSSocket> {
  const started = Date.now()
  const socket = await connectToDestination(destination, connector)
  const remaining = Math.max(1, connector.connectTimeout - (Date.now() - started))
  return await handshake(socket, destination, settings, remaining)
}

function handshake (socket: Socket, destination: ForwardProxyDestination, settings: DestinationTlsSettings, timeout: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    // The TLS socket reports the transport's failures; this keeps a late one from crashing us.
    socket.on('error', () => {})
    const tlsSocket = tlsConnect({
      socket,
      ...(isIP(destination.host) === 0 ? { servername: destination.host } : {}),
      ALPNProtocols: ['http/1.1'],
      secureContext: settings.secureContext,
      // Verification runs in judgeCertificate, where the operator's check can see the
      // certificate and the error; Node's own host name check would use "localhost" for IPs.
      rejectUnauthorized: false,
      checkServerIdentity: () => undefined
    })
    const fail = (error: ProxyError): void => {
      clearTimeout(timer)
      tlsSocket.removeListener('error', onError)
      tlsSocket.on('error', () => {})
      tlsSocket.destroy()
      reject(error)
    }
    const timer = setTimeout(() => {
      fail(new ProxyError('connection_timeout', 'The TLS handshake with the destination timed out.', { details: 'TLS handshake timed out' }))
    }, timeout)
    const onError = (error: Error): void => fail(tlsHandshakeError(error))
    tlsSocket.once('error', onError)
    tlsSocket.once('secureConnect', () => {
      const problem = judgeCertificate(tlsSocket, destination, settings)
      if (problem !== null) return fail(problem)
      clearTimeout(timer)
      tlsSocket.removeListener('error', onError)
      resolve(tlsSocket)
    })
  })
}

/** Applies the default check (chain and host name) or the operator's; null means accepted. */
function judgeCertificate (socket: TLSSocket, destination: ForwardProxyDestination, settings: DestinationTlsSettings): ProxyError | null {
  // Node returns an empty object when the peer sent no certificate.
  const certificate: DetailedPeerCertificate = socket.getPeerCertificate(true)
  if (!Buffer.isBuffer(certificate.raw)) {
    return new ProxyError('tls_certificate_error', 'The destination presented no certificate.', { details: 'no certificate' })
  }
  const chainError = socket.authorizationError === null ? null : asError(socket.authorizationError)
  const error = chainError ?? checkServerIdentity(destination.host, certificate) ?? null
  if (settings.check === null) return error === null ? null : certificateProblem(error)
  let accepted: boolean
  try {
    accepted = settings.check(certificate, error, destination) === true
  } catch (cause) {
    return new ProxyError('proxy_internal_error', 'The destination certificate check failed.', { cause })
  }
  if (accepted) return null
  return error === null
    ? new ProxyError('tls_certificate_error', 'The destination certificate was rejected.', { details: 'rejected by the certificate check' })
    : certificateProblem(error)
}

// Node types `authorizationError` as an Error, but it holds the verification code as a string.
function asError (value: Error | string): Error {
  if (value instanceof Error) return value
  const error = new Error(`certificate verification failed: ${value}`) as Error & { code: string }
  error.code = value
  return error
}
