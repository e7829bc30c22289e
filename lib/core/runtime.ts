// What one registration of the proxy shares between its parts: resolved settings, policy,
// connector, dispatchers, tunnel and request counters, and the contract between the CONNECT flow
// and the interception endpoint.

import type { Agent } from 'undici'
import type { Socket } from 'node:net'
import type { Duplex, Readable } from 'node:stream'
import type { TLSSocket, TLSSocketOptions } from 'node:tls'
import type { Http2Stream } from 'node:http2'
import type { Context } from '@opentelemetry/api'
import type { FastifyBaseLogger } from 'fastify'
import type {
  ForwardProxyCertificateProviderSource,
  ForwardProxyInterceptionSelectorSource,
  ForwardProxyCertificateProvider
} from '../../types/interception'
import type { ResolvedProxySettings } from './options'
import type { TransformRegistry } from './transform-lists'
import type { DestinationTlsSettings, InterceptionSettings } from './interception-options'
import type { DestinationPolicy } from '../security/destination-policy'
import type { DestinationConnectorSettings } from '../security/destination-connector'
import type { UserPolicy } from '../security/user-policy'
import type { SharedLimits } from '../security/shared-limits'
import type { ForwardProxyControl } from '../../types/control'
import type { ForwardProxyDestination } from '../../types/destination'
import type { TunnelGrant } from '../security/tunnel-grant'
import type { TrafficCapture } from '../capture/traffic-capture'
import { OpenList } from './open-list'

/** Everything one registration of the proxy shares between its parts. */
export interface ProxyRuntime {
  /** Replaced whole by `reconfigure`: read it at the time of use, never keep it. */
  settings: ResolvedProxySettings
  /**
   * The Fastify context forwardProxy was registered in; tlsInterception must be registered in
   * the same one.
   */
  readonly registeredOn: object
  /** Replaced by `reconfigure`, like `settings`. */
  policy: DestinationPolicy
  /**
   * Set when the server starts closing (Fastify's preClose): requests and tunnels cut from then
   * on were cut by the shutdown, not left by their clients.
   */
  shuttingDown: boolean
  readonly connector: DestinationConnectorSettings
  readonly tunnels: TunnelRegistry
  /** Each user's own hosts, open tunnels and request rate (fields of `request.proxyUser`). */
  readonly userPolicy: UserPolicy
  /** Where the limits shared between processes are counted; null: in this process only. */
  readonly sharedLimits: SharedLimits | null
  /** Forwarded requests in flight (`http://` and inside intercepted tunnels), against `limits.maxConcurrentRequests`. */
  readonly forwardedRequests: ConcurrencyLimit
  /**
   * Carries requests to `http://` destinations. Replaced by `reconfigure` (the old one closes
   * once its requests in flight are done), so no pooled connection outlives the policy it was
   * dialed under: read it at the time of use.
   */
  dispatcher: Agent
  /** Carries requests to `https://` destinations (inside intercepted tunnels), reading `destinationTls` on every connect; replaced like `dispatcher`. */
  tlsDispatcher: Agent
  /** Carries `http://` requests in absolute form to upstream proxies (`upstreamProxies`); replaced like `dispatcher`. */
  upstreamDispatcher: Agent
  /** The `capture` option at work: which requests are recorded, the HAR file, the `captures()` iterators. */
  readonly capture: TrafficCapture
  /**
   * How `https://` destinations are validated. Defaults to Node's trust store and only
   * error-free certificates; the tlsInterception plugin replaces it at registration.
   */
  destinationTls: DestinationTlsSettings
  /**
   * The transforms, in registration order: the `transforms` option first, then
   * `fastify.forwardProxy.addTransform` calls and tlsInterception's (run inside intercepted
   * tunnels only). Its lists are replaced (never edited) when they change, so a request that
   * began with one list ends with it.
   */
  readonly transforms: TransformRegistry
  /**
   * Set by the tlsInterception plugin when it is registered; absent means no tunnel is
   * intercepted (optional so that runtimes built without the plugin need not name it).
   */
  interception?: InterceptionRuntime
}

const runtimes = new WeakMap<ForwardProxyControl, ProxyRuntime>()

/** Links a registration's `fastify.forwardProxy` decorator to its runtime, for plugins built on it. */
export function rememberProxyRuntime (control: ForwardProxyControl, runtime: ProxyRuntime): void {
  runtimes.set(control, runtime)
}

/** The runtime behind a `fastify.forwardProxy` decorator, or undefined for anything else. */
export function proxyRuntimeOf (control: unknown): ProxyRuntime | undefined {
  return typeof control === 'object' && control !== null ? runtimes.get(control as ForwardProxyControl) : undefined
}

/** What a registered tlsInterception plugin gives the CONNECT flow. */
export interface InterceptionRuntime {
  readonly settings: InterceptionSettings
  readonly endpoint: TunnelInterceptor
  /** With `passthroughOnClientRefusal`: the refusals counted, and the passthroughs in force. */
  readonly clientRefusals: ClientRefusalPolicy | null
  /** Why a destination must stay intercepted whatever its clients refuse (a secret, a header rule), or null. */
  readonly keepsInterception: (destination: ForwardProxyDestination) => string | null
  /** From the options or the `forwardProxyInterceptionSelector` decorator (known once ready); null intercepts nothing. */
  selector: ForwardProxyInterceptionSelectorSource | null
  /** From the options or the `forwardProxyCertificateProvider` decorator (known once ready). */
  certificateProvider: ForwardProxyCertificateProviderSource | null
}

/** Whose tunnels a refusal of the proxy's certificate counts for: the user, or without one the client's address. */
export interface TunnelClientIdentity {
  readonly user: string | null
  readonly address: string | undefined
}

/**
 * `passthroughOnClientRefusal`: a client's TLS alerts refusing the proxy's certificate, counted
 * per user (or client address) and host, and the opaque relaying that follows enough of them.
 */
export interface ClientRefusalPolicy {
  /** True while `client`'s tunnels to `destination` are relayed opaquely. */
  passingThrough (client: TunnelClientIdentity, destination: ForwardProxyDestination): boolean
  /** Counts one refusal; true when it started a passthrough (the count starts again after). */
  refused (client: TunnelClientIdentity, destination: ForwardProxyDestination): boolean
  /** A handshake that succeeded: the refusals in a row start again from zero. */
  accepted (client: TunnelClientIdentity, destination: ForwardProxyDestination): void
}

/**
 * The client side of an HTTP/1.1 CONNECT chosen for interception, once the 200 is out: the
 * whole connection, on whose socket the TLS server side is layered directly.
 */
export interface InterceptedConnection {
  readonly kind: 'connection'
  readonly socket: Socket
  /** Bytes the client sent after its CONNECT head (an early ClientHello), read before the socket. */
  readonly head: Buffer
}

/**
 * The client side of an HTTP/2 CONNECT chosen for interception, once the 200 is out: one
 * stream, read through Node's compatibility request and written on the stream.
 */
export interface InterceptedStream {
  readonly kind: 'stream'
  /** Where the client's bytes are read from. */
  readonly input: Readable
  /** Where bytes for the client are written. */
  readonly output: Duplex
  /** Tears the stream down after a failure (reset with CONNECT_ERROR). */
  readonly abort: () => void
}

/** The client side of an intercepted tunnel, whatever carries it. */
export type InterceptedClient = InterceptedConnection | InterceptedStream

/** Byte counts of a finished intercepted tunnel, for logs and metrics. */
export interface TransportSummary {
  /** Bytes (TLS records) from the client. */
  readonly bytesUp: number
  /** Bytes (TLS records) to the client. */
  readonly bytesDown: number
  /** Why it ended. */
  readonly reason: 'closed' | 'idle-timeout' | 'aborted' | HandshakeCloseReason
  /**
   * With `handshake-error`: Node's code for what failed (`ERR_SSL_HTTP_REQUEST` for a client
   * that spoke plain HTTP, `ERR_SSL_UNSUPPORTED_PROTOCOL` for an old TLS version, a
   * `..._ALERT_...` code for the alert a client refused the certificate with).
   */
  readonly handshakeError?: string
}

/**
 * Why an intercepted tunnel ended before its client's TLS handshake completed: the proxy had no
 * certificate to present (`handshake-refused`), the handshake failed (`handshake-error`: the
 * client refused the certificate, or spoke something other than TLS), or it took longer than
 * the handshake timeout (`handshake-timeout`).
 */
export type HandshakeCloseReason = 'handshake-refused' | 'handshake-error' | 'handshake-timeout'

/**
 * What the client's TLS handshake runs on for an intercepted tunnel: it keeps the tunnel's
 * idle timer and byte counts, can refuse the handshake without TLS, and emits `'close'` once
 * when the client side is gone, however it ended.
 */
export interface ClientTransport {
  /** True once the client side is closed or being closed. */
  readonly destroyed: boolean
  /** Byte counts and why the tunnel ended (final once `'close'` has fired). */
  readonly summary: TransportSummary
  once: (event: 'close', listener: () => void) => this
  removeListener: (event: 'close', listener: () => void) => this
  /** Closes the client side (and the TLS socket layered on it). */
  destroy: () => void
  /** Fails the client's handshake with a plaintext handshake_failure alert, then closes (`handshake-refused`). */
  refuseHandshake: () => void
  /** Notes why the handshake failed, as the tunnel's close reason (and `detail` as its `handshakeError`); call before closing it. */
  noteHandshakeFailure: (reason: HandshakeCloseReason, detail?: string) => void
  /** Layers the server side of TLS on the client side; call once, after the certificate is known. */
  startTls: (options: TLSSocketOptions) => TLSSocket
}

/**
 * Counts open CONNECT tunnels against `maxConcurrentTunnels` and remembers their sockets (the
 * client's from admission, the destination's once dialed) so that closing the server tears
 * them down, connects in progress included. A slot is taken before the destination is dialed
 * (a connect in progress counts) and given back exactly once.
 */
export class TunnelRegistry {
  readonly #slots: ConcurrencyLimit
  readonly #open = new OpenList<Duplex>()
  readonly #revocable = new OpenList<RevocableTunnel>()

  constructor (maxConcurrentTunnels: number) {
    this.#slots = new ConcurrencyLimit(maxConcurrentTunnels)
  }

  /** Tunnels open or being opened. */
  get active (): number {
    return this.#slots.active
  }

  /**
   * Reserves a slot; returns a release function (idempotent), or null when the limit is reached.
   */
  tryReserve (): (() => void) | null {
    return this.#slots.tryReserve()
  }

  /** Changes the limit for tunnels opened from now on; open ones stay open. */
  setLimit (maxConcurrentTunnels: number): void {
    this.#slots.setLimit(maxConcurrentTunnels)
  }

  /** Tracks a stream of a tunnel (its client's side) until it closes. */
  track (stream: Duplex): void {
    const entry = this.#open.add(stream)
    stream.on('close', () => this.#open.delete(entry))
  }

  /**
   * Tracks an open opaque tunnel's destination socket until it closes, and keeps the tunnel for
   * {@link TunnelRegistry.revocable} as long: one listener for both, as every CONNECT pays for it.
   */
  trackOpaque (destination: Duplex, tunnel: RevocableTunnel): void {
    const open = this.#open.add(destination)
    const revocable = this.#revocable.add(tunnel)
    destination.on('close', () => {
      this.#open.delete(open)
      this.#revocable.delete(revocable)
    })
  }

  /** The open opaque tunnels, for checking them again after a reconfiguration. */
  get revocable (): Iterable<RevocableTunnel> {
    return this.#revocable.toArray()
  }

  /**
   * Destroys every tracked tunnel stream (server shutdown) and resolves once each has closed
   * and the turn after it has run, so that every tunnel's close (its access line, its metrics)
   * is done before the process goes; at most `wait` ms. The HTTP/2 session an HTTP/2 tunnel
   * ran on is closed gracefully too (GOAWAY: its other streams finish, no new ones open): it
   * would otherwise outlive its tunnel, and Node 20's HTTP/2 server does not finish `close()`
   * while a session is open, idle or not.
   */
  async destroyAll (wait = 1_000): Promise<void> {
    const closed: Array<Promise<unknown>> = []
    for (const stream of this.#open.toArray()) {
      const { session } = stream as Partial<Http2Stream>
      if (!stream.closed) closed.push(new Promise((resolve) => stream.once('close', resolve)))
      stream.destroy()
      if (session !== undefined && !session.closed) session.close()
    }
    if (closed.length === 0) return
    let timer: NodeJS.Timeout | undefined
    await Promise.race([Promise.all(closed), new Promise((resolve) => { timer = setTimeout(resolve, wait) })])
    clearTimeout(timer)
    // A relay reports its tunnel when both of its sides have closed: give that its turn.
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** An open opaque tunnel as a reconfiguration sees it. */
export interface RevocableTunnel {
  readonly grant: TunnelGrant
  readonly destination: ForwardProxyDestination
  /** Closes the tunnel (both sides). */
  readonly close: () => void
}

/**
 * Counts work in progress against a maximum: a slot is reserved before the work starts and given
 * back exactly once, however the work ends.
 */
export class ConcurrencyLimit {
  #max: number
  #reserved = 0

  constructor (max: number) {
    this.#max = max
  }

  /** Slots reserved and not yet given back. */
  get active (): number {
    return this.#reserved
  }

  /** Changes the maximum for reservations from now on; slots held beyond it are kept until released. */
  setLimit (max: number): void {
    this.#max = max
  }

  /** Reserves a slot; returns its release function (idempotent), or null when every slot is taken. */
  tryReserve (): (() => void) | null {
    if (this.#reserved >= this.#max) return null
    this.#reserved++
    let released = false
    return () => {
      if (released) return
      released = true
      this.#reserved--
    }
  }
}

/** One tunnel chosen for interception, its 200 already sent. */
export interface AcceptedTunnel {
  readonly client: InterceptedClient
  readonly destination: ForwardProxyDestination
  /** Who may use the tunnel: `request.proxyUser` of every request inside, checked again after a reconfiguration. */
  readonly grant: TunnelGrant
  /** The client's address, for the access log of requests inside. */
  readonly clientAddress: string | undefined
  /** The CONNECT's trace context, parent of the spans of requests inside that bring none. */
  readonly traceContext: Context | undefined
  readonly provider: ForwardProxyCertificateProvider
  readonly idleTimeout: number
  readonly log: FastifyBaseLogger
  /** Called once when the tunnel has closed, however it ended. */
  readonly onClose: (summary: TransportSummary) => void
}

/** Where the CONNECT flow hands a tunnel chosen for interception: the in-memory interception endpoint. */
interface TunnelInterceptor {
  /** Takes over a tunnel whose 200 is already sent: terminates TLS and serves the requests inside. */
  accept (tunnel: AcceptedTunnel): void
}
