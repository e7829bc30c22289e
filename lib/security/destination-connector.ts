// Resolves, checks and dials a destination: only addresses the policy allows are dialed.

import { connect, isIP, type OnReadOpts, type Socket } from 'node:net'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyResolver, ResolvedAddress } from '../../types/options'
import { ProxyError } from '../protocol/errors'
import { proxyErrorFromNetworkError } from '../protocol/network-errors'
import type { DestinationPolicy, OwnListeners } from './destination-policy'
import { connectThroughUpstream, upstreamIsThisProxy, type UpstreamProxy, type UpstreamRoutes } from './upstream-proxy'
import { rememberDialedAddress } from './dialed-address'

/** What a connect needs: the policy, a resolver and the time allowed for DNS plus TCP. */
export interface DestinationConnectorSettings {
  readonly policy: DestinationPolicy
  readonly resolver: ForwardProxyResolver
  readonly connectTimeout: number
  /** The proxy's own listeners, never dialed (508 `proxy_loop_detected`). */
  readonly ownListeners?: OwnListeners
  /** Which destinations go through an upstream proxy; absent or null: none. */
  readonly upstreams?: UpstreamRoutes | null
}

/**
 * Cancels work done for one CONNECT, one dial or one forwarded request: an AbortController
 * without the EventTarget. Creating an AbortController and listening on its signal costs about
 * 4.6 µs in a loop and, with the two a CONNECT needed, about 30 µs of the proxy's CPU per CONNECT
 * under load; these listeners are plain functions, and a real AbortSignal is made only when
 * application code (a selector, a destination filter, a resolver, a transform) is given one.
 * undici takes it as a request's `signal` as it is (`aborted` and the two listener methods).
 */
export class Cancellation {
  /** True once {@link abort} has run. */
  aborted = false
  /** What {@link abort} was given. */
  reason: unknown = undefined
  private listeners: Array<() => void> | undefined
  private controller: AbortController | undefined

  /** Cancels: calls every listener once, in order, and aborts the signal if one was made. */
  abort (reason?: unknown): void {
    if (this.aborted) return
    this.aborted = true
    this.reason = reason
    this.controller?.abort(reason)
    const listeners = this.listeners
    this.listeners = undefined
    if (listeners !== undefined) for (const listener of listeners) listener()
  }

  /** Calls `listener` on {@link abort} (never if already aborted); returns a function that stops listening. */
  onAbort (listener: () => void): () => void {
    if (this.aborted) return () => {}
    const listeners = this.listeners ?? (this.listeners = [])
    listeners.push(listener)
    return () => this.removeEventListener('abort', listener)
  }

  /** `onAbort` in the shape undici calls on a request's `signal`. */
  addEventListener (_type: 'abort', listener: () => void): void {
    this.onAbort(listener)
  }

  /** Stops a listener added with {@link addEventListener}. */
  removeEventListener (_type: 'abort', listener: () => void): void {
    const index = this.listeners?.indexOf(listener) ?? -1
    if (index !== -1) this.listeners?.splice(index, 1)
  }

  /** An AbortSignal that follows this cancellation, made on first use. */
  get signal (): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController()
      if (this.aborted) this.controller.abort(this.reason)
    }
    return this.controller.signal
  }
}

/**
 * Resolves a destination, keeps only the addresses the policy allows and dials them in order
 * until one answers; the socket returned is connected to an address that was checked, so a
 * second, different DNS answer can never be what gets dialed (`dialedAddressOf` tells which). Everything (DNS and TCP) must
 * finish within `connectTimeout`. `cancel` aborts the attempt when the client goes away.
 * `onread`, when given, is the socket's `onread` option (an opaque tunnel's destination reader).
 *
 * With `upstream`, the destination is reached through that proxy instead (CONNECT): its name is
 * not resolved here (the upstream resolves it), and only an IP-literal destination is checked
 * against the address policy.
 *
 * Throws a ProxyError: `destination_ip_prohibited` when no resolved address is allowed,
 * `proxy_loop_detected` when an allowed address is one of the proxy's own listeners,
 * `dns_error`/`dns_timeout`, `connection_refused`, `connection_timeout` and so on (with
 * `nextHop` when they came from the upstream).
 */
export function connectToDestination (
  destination: ForwardProxyDestination,
  settings: DestinationConnectorSettings,
  cancel?: Cancellation,
  onread?: OnReadOpts,
  upstream?: UpstreamProxy | null
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    connectToDestinationThen(destination, settings, (error, socket) => {
      if (socket === undefined) reject(error)
      else resolve(socket)
    }, cancel, onread, upstream)
  })
}

/** What {@link connectToDestinationThen} calls once: with the connected socket, or with the error alone. */
export type DialCallback = (error: unknown, socket?: Socket) => void

/**
 * {@link connectToDestination} with a callback instead of a promise: `callback` runs once, with
 * the connected socket or with the ProxyError. An IP literal without an upstream, an opaque
 * CONNECT's usual destination, is checked and dialed with no promise at all.
 */
export function connectToDestinationThen (
  destination: ForwardProxyDestination,
  settings: DestinationConnectorSettings,
  callback: DialCallback,
  cancel?: Cancellation,
  onread?: OnReadOpts,
  upstream?: UpstreamProxy | null
): void {
  if (upstream !== undefined && upstream !== null) {
    connectThroughChecked(destination, settings, upstream, cancel, onread).then((socket) => callback(null, socket), callback)
    return
  }
  const literalFamily = isIP(destination.host)
  if (literalFamily !== 4 && literalFamily !== 6) {
    resolveAndDial(destination, settings, cancel, onread).then((socket) => callback(null, socket), callback)
    return
  }
  // An IP literal has nothing to resolve: checked and dialed at once, without the DNS path's
  // promises (an opaque CONNECT to an address pays for one dial, nothing more).
  try {
    settings.policy.checkAddress(destination.host)
    refuseOwnListener(settings, destination.host, destination.port)
  } catch (error) {
    callback(error)
    return
  }
  const target: DialTarget = { host: destination.host, port: destination.port, family: literalFamily === 4 ? 4 : 6, onread }
  dialThen(target, cancel, { aborted: false }, settings.connectTimeout, callback)
}

async function connectThroughChecked (
  destination: ForwardProxyDestination,
  settings: DestinationConnectorSettings,
  upstream: UpstreamProxy,
  cancel: Cancellation | undefined,
  onread: OnReadOpts | undefined
): Promise<Socket> {
  if (isIP(destination.host) !== 0) settings.policy.checkAddress(destination.host)
  // A CONNECT carries no Via: an upstream that is this proxy would chain it to itself forever.
  // One named by an address is refused before the dial, one named by a host name once dialed.
  const { ownListeners } = settings
  if (isIP(upstream.host) !== 0 && ownListeners?.includes(upstream.host, upstream.port) === true) throw upstreamIsThisProxy(upstream.label)
  const isOwnListener = ownListeners === undefined ? undefined : (address: string, port: number): boolean => ownListeners.includes(address, port)
  return await connectThroughUpstream(upstream, destination, settings.connectTimeout, cancel, onread, isOwnListener)
}

/** Refuses an address and port that one of the proxy's own listeners answers on. */
function refuseOwnListener (settings: DestinationConnectorSettings, address: string, port: number): void {
  if (settings.ownListeners?.includes(address, port) === true) {
    throw new ProxyError('proxy_loop_detected', 'The destination is this proxy itself.', { details: 'the destination is this proxy' })
  }
}

/** A host name's way: resolved, its allowed addresses dialed in order, all within `connectTimeout`. */
async function resolveAndDial (
  destination: ForwardProxyDestination,
  settings: DestinationConnectorSettings,
  cancel: Cancellation | undefined,
  onread: OnReadOpts | undefined
): Promise<Socket> {
  // One cancellation and one timer per attempt, both gone when it ends: AbortSignal.timeout()
  // would keep each attempt's signal and timer for the whole connectTimeout, thousands of them
  // when clients open and abandon CONNECTs quickly.
  const abort = new Cancellation()
  const deadline: Deadline = { aborted: false }
  const timer = setTimeout(() => {
    deadline.aborted = true
    abort.abort(new ProxyError('connection_timeout', 'Connecting to the destination timed out.'))
  }, settings.connectTimeout)
  let stopFollowing = (): void => {}
  if (cancel?.aborted === true) abort.abort(cancel.reason)
  else if (cancel !== undefined) stopFollowing = cancel.onAbort(() => abort.abort(cancel.reason))
  try {
    const addresses = await resolveAllowed(destination, settings, abort, deadline)
    for (const { address } of addresses) refuseOwnListener(settings, address, destination.port)
    let lastError: unknown
    for (const { address, family } of addresses) {
      try {
        return await dial({ host: address, port: destination.port, family, onread }, abort, deadline, null)
      } catch (error) {
        lastError = error
        if (abort.aborted) break
      }
    }
    throw proxyErrorFromNetworkError(lastError)
  } finally {
    clearTimeout(timer)
    stopFollowing()
  }
}

/** Whether an attempt's connectTimeout has passed. */
interface Deadline {
  aborted: boolean
}

async function resolveAllowed (
  destination: ForwardProxyDestination,
  settings: DestinationConnectorSettings,
  abort: Cancellation,
  deadline: Deadline
): Promise<ResolvedAddress[]> {
  let resolved: ResolvedAddress[]
  try {
    resolved = await raceAbort(settings.resolver(destination.host, abort.signal), abort)
  } catch (error) {
    if (deadline.aborted) throw new ProxyError('dns_timeout', 'Resolving the destination host name timed out.', { cause: error })
    throw proxyErrorFromNetworkError(error)
  }
  if (resolved.length === 0) {
    throw new ProxyError('dns_error', 'The destination host name could not be resolved.', { details: 'no addresses' })
  }
  const allowed = resolved.filter(({ address }) => settings.policy.isAddressAllowed(address))
  if (allowed.length === 0) {
    // Report the category of the first refused address; never which internal address it was.
    const first = resolved[0]
    if (first !== undefined) settings.policy.checkAddress(first.address)
  }
  return allowed
}

interface DialTarget {
  readonly host: string
  readonly port: number
  readonly family: 4 | 6
  readonly onread: OnReadOpts | undefined
}

/**
 * Dials one checked address and calls `callback` once. Fails with `connection_terminated` when
 * `abort` fires (the client left) or `connection_timeout` once `deadline` is marked; with
 * `timeout`, the dial marks its own deadline after that many milliseconds (an IP literal's only
 * attempt), without it the caller's timer does (a resolved name's attempts share one). A socket
 * error is turned into its ProxyError.
 */
function dialThen (target: DialTarget, abort: Cancellation | undefined, deadline: Deadline, timeout: number | null, callback: DialCallback): void {
  const { host, port, family, onread } = target
  if (abort?.aborted === true) {
    callback(abortedDialError(deadline))
    return
  }
  // One options object: Node skips an undefined `onread`.
  const socket = connect({ host, port, family, allowHalfOpen: true, noDelay: true, onread })
  let timer: NodeJS.Timeout | undefined
  const fail = (error: unknown): void => {
    clearTimeout(timer)
    stopListening()
    socket.destroy()
    callback(proxyErrorFromNetworkError(error))
  }
  const stopListening = abort === undefined ? noop : abort.onAbort(() => fail(abortedDialError(deadline)))
  if (timeout !== null) {
    timer = setTimeout(() => {
      deadline.aborted = true
      fail(abortedDialError(deadline))
    }, timeout)
  }
  // on(), removed when it runs: once() would wrap it in two more objects, and left attached it
  // would keep this dial's closures for the tunnel's whole life.
  const connected = (): void => {
    clearTimeout(timer)
    stopListening()
    socket.removeListener('error', fail)
    socket.removeListener('connect', connected)
    rememberDialedAddress(socket, target)
    callback(null, socket)
  }
  socket.on('connect', connected)
  socket.once('error', fail)
}

/** {@link dialThen} as a promise (each of a resolved name's addresses in turn). */
function dial (target: DialTarget, abort: Cancellation | undefined, deadline: Deadline, timeout: number | null): Promise<Socket> {
  return new Promise((resolve, reject) => {
    dialThen(target, abort, deadline, timeout, (error, socket) => {
      if (socket === undefined) reject(error)
      else resolve(socket)
    })
  })
}

function noop (): void {}

function abortedDialError (deadline: Deadline): ProxyError {
  return deadline.aborted
    ? new ProxyError('connection_timeout', 'Connecting to the destination timed out.')
    : new ProxyError('connection_terminated', 'The client went away while connecting.')
}

function raceAbort<T> (promise: Promise<T>, abort: Cancellation): Promise<T> {
  if (abort.aborted) return Promise.reject(abort.reason)
  return new Promise((resolve, reject) => {
    const stopListening = abort.onAbort(() => reject(abort.reason))
    promise.then(
      (value) => { stopListening(); resolve(value) },
      (error: unknown) => { stopListening(); reject(error) }
    )
  })
}
