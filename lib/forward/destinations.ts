// The undici Agents that carry forwarded requests to `http://` and `https://` destinations through
// the checked connector, and the destination TLS errors.

import { isIPv6, isIP, type Socket } from 'node:net'
import { Agent, Client, Pool, type Dispatcher, type buildConnector } from 'undici'
import {
  connect as tlsConnect,
  type DetailedPeerCertificate,
  type TLSSocket
} from 'node:tls'
import { connectToDestination, type DestinationConnectorSettings } from '../security/destination-connector'
import { dialUpstream, upstreamIsThisProxy, upstreamUnreachable } from '../security/upstream-proxy'
import { certificateVerdictCode, serverIdentityError } from '../security/server-identity'
import { canonicalHost, formatAuthority } from '../protocol/hosts'
import { ProxyError, isProxyError } from '../protocol/errors'
import { errorCode } from '../protocol/network-errors'
import type { ForwardProxyDestination } from '../../types/destination'
import type { DestinationTlsSettings } from '../core/interception-options'
import { carryDialedAddress, noteDialDurations } from '../security/dialed-address'
import type { ForwardNotes, PooledConnection } from '../telemetry/request-telemetry'
import { exchangeOf, type ExchangeOfRequest } from './destination-exchange'

/** The host undici asks a connector for, canonical; it hands IPv6 literals over without brackets. */
function hostOf (options: buildConnector.Options): string | null {
  return canonicalHost(isIPv6(options.hostname) ? `[${options.hostname}]` : options.hostname)
}

/**
 * The Agent every forwarding dispatcher uses around its own `connect`: keep-alive connections
 * reused per origin for 4 s, the response head within `httpActivityTimeout`. Body inactivity is
 * timed by the forwarder, which knows whether the body is an event stream. Each pooled
 * connection is a {@link TrackedConnection}, so a request knows which one it went on.
 */
function forwardingAgent (connect: buildConnector.connector, httpActivityTimeout: number): Agent {
  return new Agent({
    connect,
    headersTimeout: httpActivityTimeout,
    bodyTimeout: 0,
    keepAliveTimeout: 4_000,
    maxHeaderSize: 64 * 1024,
    factory: (origin, options) => new Pool(origin, { ...options, factory: trackedConnection })
  })
}

/**
 * One pooled connection to a destination (an undici Client, which holds one socket at a time and
 * serves one request at a time on it) that remembers the socket of its last dial, and notes
 * itself on each request it is given: a request whose `opaque` is its {@link ForwardNotes} gets
 * `pooledOn` set to it, so its access line names the address of the connection it went on,
 * reused or new. Costs a property check per request; nothing is allocated.
 */
class TrackedConnection extends Client implements PooledConnection {
  /** The socket of this connection's last dial: the one its requests go on until it closes. */
  lastDialed: object | undefined = undefined
  /** The exchange of the request given last: the one a destination closing its side concerns. */
  #exchange: ExchangeOfRequest | undefined = undefined

  override dispatch (options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const notes = (options as { opaque?: unknown }).opaque
    if (isForwardNotes(notes)) notes.pooledOn = this
    this.#exchange = exchangeOf(options)
    return super.dispatch(options, handler)
  }

  /** Its socket's 'end', heard before undici's own listener (see {@link ExchangeOfRequest.destinationEnded}). */
  destinationEnded (): void {
    this.#exchange?.destinationEnded()
    this.#exchange = undefined
  }
}

function isForwardNotes (value: unknown): value is ForwardNotes {
  return typeof value === 'object' && value !== null && 'pooledOn' in value
}

/** The Pool's factory of {@link TrackedConnection}s: each wraps the Pool's `connect` to see its sockets. */
function trackedConnection (origin: URL, options: object): Dispatcher {
  const { connect } = options as { connect: buildConnector.connector }
  const connection: TrackedConnection = new TrackedConnection(origin, {
    ...options,
    connect: (connectOptions, callback) => {
      connect(connectOptions, (...result) => {
        const socket = result[1]
        if (socket !== null) {
          connection.lastDialed = socket
          socket.prependListener('end', () => connection.destinationEnded())
        }
        callback(...result)
      })
    }
  })
  return connection
}

/**
 * Creates the undici Agent that carries forwarded requests. Every new connection goes through
 * `connectToDestination`, so the destination's addresses are resolved and checked against the
 * policy on every connect (not only when the request arrived) and only a checked address is
 * dialed. Connections are kept alive and reused per origin.
 */
export function createDestinationDispatcher (connector: DestinationConnectorSettings, httpActivityTimeout: number): Agent {
  const connect: buildConnector.connector = (options, callback) => {
    const host = hostOf(options)
    const port = Number(options.port === '' ? 80 : options.port)
    if (host === null || options.protocol !== 'http:') {
      callback(new ProxyError('proxy_internal_error', 'The proxy built an invalid destination.'), null)
      return
    }
    const started = performance.now()
    connectToDestination({ host, port }, connector).then(
      (socket) => {
        const openedAt = performance.now()
        noteDialDurations(socket, { connect: openedAt - started, ssl: -1, openedAt })
        callback(null, socket)
      },
      (error: Error) => callback(error, null)
    )
  }
  return forwardingAgent(connect, httpActivityTimeout)
}

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
    const host = hostOf(options)
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
  return forwardingAgent(connect, httpActivityTimeout)
}

/**
 * Creates the undici Agent that carries `http://` requests to upstream proxies, in absolute
 * form (the caller gives the upstream as origin and `http://host:port/path` as path). Its
 * connections go to the upstream itself, a host the operator named: it is dialed without the
 * destination policy, over TLS (validated against the rule's `ca` or Node's roots) for an
 * `https://` upstream. Failures name the upstream in `nextHop`.
 */
export function createUpstreamDispatcher (connector: DestinationConnectorSettings, httpActivityTimeout: number): Agent {
  const connect: buildConnector.connector = (options, callback) => {
    const port = Number(options.port === '' ? (options.protocol === 'https:' ? 443 : 80) : options.port)
    const label = formatAuthority(hostOf(options) ?? options.hostname, port)
    const upstream = connector.upstreams?.byOrigin(`${options.protocol}//${label}`)
    if (upstream === undefined) {
      callback(new ProxyError('proxy_internal_error', 'The proxy built an invalid upstream.'), null)
      return
    }
    const { socket, readyEvent } = dialUpstream(upstream)
    const timer = setTimeout(() => socket.destroy(new ProxyError('connection_timeout', 'The upstream proxy did not answer in time.', { nextHop: label })), connector.connectTimeout)
    const onError = (error: Error): void => {
      clearTimeout(timer)
      callback(upstreamUnreachable(error, label), null)
    }
    socket.once('error', onError)
    socket.once(readyEvent, () => {
      clearTimeout(timer)
      socket.removeListener('error', onError)
      // The request would come back here and be sent there again, as long as the slots last.
      if (connector.ownListeners?.includes(socket.remoteAddress ?? '', socket.remotePort ?? 0) === true) {
        socket.destroy()
        callback(upstreamIsThisProxy(label), null)
        return
      }
      callback(null, socket)
    })
  }
  return forwardingAgent(connect, httpActivityTimeout)
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
  const started = performance.now()
  // Pooled connections serve many requests: the choice is made for the destination alone.
  const upstream = await connector.upstreams?.routeFor(destination, null, 'tunnel') ?? null
  const socket = await connectToDestination(destination, connector, undefined, undefined, upstream)
  const connected = performance.now()
  const remaining = Math.max(1, connector.connectTimeout - (connected - started))
  const secured = await handshake(socket, destination, settings, remaining)
  carryDialedAddress(secured, socket)
  const openedAt = performance.now()
  noteDialDurations(secured, { connect: connected - started, ssl: openedAt - connected, openedAt })
  return secured
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
  const error = chainError ?? serverIdentityError(destination.host, certificate) ?? null
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

// Verdicts that mean the chain does not end at a CA the proxy trusts (a private or self-signed CA).
const UNTRUSTED_ISSUER_CODES = new Set([
  'CERT_UNTRUSTED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'
])

/**
 * What the operator can do about a destination certificate error, for the log line only (never
 * sent to the client): for an issuer the proxy does not trust, where to add that CA.
 */
export function certificateErrorHint (error: ProxyError): string | undefined {
  if (error.errorType !== 'tls_certificate_error' || error.details === undefined || !UNTRUSTED_ISSUER_CODES.has(error.details)) return undefined
  if (error.nextHop !== undefined) {
    return 'the upstream proxy\'s certificate is not issued by a CA the proxy trusts: add its CA (PEM) to the upstream\'s rule (upstreamProxies[].ca)'
  }
  return 'the destination\'s certificate is not issued by a CA the proxy trusts: if this destination is yours, add its CA (PEM) with the tlsInterception option trustedDestinationCa (configuration file: "interception.trustedDestinationCa")'
}

/**
 * The 502 `tls_certificate_error` for a certificate the validation refused. The detail
 * is the verification code when it is a known one; the error's message (which lists the
 * certificate's names) stays in the logs.
 */
function certificateProblem (error: Error): ProxyError {
  const details = certificateVerdictCode(error) ?? 'certificate rejected'
  return new ProxyError('tls_certificate_error', 'The destination presented a certificate that failed validation.', { details, cause: error })
}

/**
 * Maps a failure during the TLS handshake with a destination: a certificate verdict becomes
 * `tls_certificate_error`, anything else (plain HTTP on the port, no common protocol version or
 * cipher, an alert, a reset or close mid-handshake) 502 `tls_protocol_error`. The
 * detail is OpenSSL's reason code (`ERR_SSL_...`) or `handshake failed`.
 */
function tlsHandshakeError (error: unknown): ProxyError {
  if (isProxyError(error)) return error
  if (certificateVerdictCode(error) !== undefined) return certificateProblem(error as Error)
  const code = errorCode(error)
  const details = code !== undefined && /^ERR_SSL_[A-Z0-9_]{1,80}$/.test(code) ? code : 'handshake failed'
  return new ProxyError('tls_protocol_error', 'The TLS handshake with the destination failed.', { details, cause: error })
}
