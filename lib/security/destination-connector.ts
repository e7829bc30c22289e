// Resolves, checks and dials a destination: only addresses the policy allows are dialed.

import { connect, isIP, type OnReadOpts, type Socket } from 'node:net'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyResolver, ResolvedAddress } from '../../types/options'
import { ProxyError, proxyErrorFromNetworkError } from '../protocol/errors'
import type { DestinationPolicy, OwnListeners } from './destination-policy'
import { connectThroughUpstream, type UpstreamProxy, type UpstreamRoutes } from './upstream-proxy'

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
 * Resolves a destination, keeps only the addresses the policy allows and dials them in order
 * until one answers; the socket returned is connected to an address that was checked, so a
 * second, different DNS answer can never be what gets dialed. Everything (DNS and TCP) must
 * finish within `connectTimeout`. `signal` aborts the attempt when the client goes away.
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
export async function connectToDestination (
  destination: ForwardProxyDestination,
  settings: DestinationConnectorSettings,
  signal?: AbortSignal,
  onread?: OnReadOpts,
  upstream?: UpstreamProxy | null
): Promise<Socket> {
  if (upstream !== undefined && upstream !== null) {
    if (isIP(destination.host) !== 0) settings.policy.checkAddress(destination.host)
    // A CONNECT carries no Via: an upstream that is this proxy would chain it to itself forever.
    if (isIP(upstream.host) !== 0 && settings.ownListeners?.includes(upstream.host, upstream.port) === true) {
      throw new ProxyError('proxy_loop_detected', 'The upstream proxy is this proxy itself.', { details: 'the upstream proxy is this proxy', nextHop: upstream.label })
    }
    return await connectThroughUpstream(upstream, destination, settings.connectTimeout, signal, onread)
  }
  // One controller and one timer per attempt, both gone when it ends: AbortSignal.timeout() would
  // keep each attempt's signal and timer for the whole connectTimeout, thousands of them when
  // clients open and abandon CONNECTs quickly.
  const attempt = new AbortController()
  const deadline: Deadline = { aborted: false }
  const timer = setTimeout(() => {
    deadline.aborted = true
    attempt.abort(new ProxyError('connection_timeout', 'Connecting to the destination timed out.'))
  }, settings.connectTimeout)
  const onClientGone = (): void => { attempt.abort(signal?.reason) }
  if (signal?.aborted === true) onClientGone()
  else signal?.addEventListener('abort', onClientGone, { once: true })
  const abort = attempt.signal
  try {
    const addresses = await resolveAllowed(destination, settings, abort, deadline)
    if (addresses.some(({ address }) => settings.ownListeners?.includes(address, destination.port) === true)) {
      throw new ProxyError('proxy_loop_detected', 'The destination is this proxy itself.', { details: 'the destination is this proxy' })
    }
    let lastError: unknown
    for (const { address, family } of addresses) {
      try {
        return await dial({ host: address, port: destination.port, family, onread }, abort, deadline)
      } catch (error) {
        lastError = error
        if (abort.aborted) break
      }
    }
    throw proxyErrorFromNetworkError(lastError)
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onClientGone)
  }
}

/** Whether an attempt's connectTimeout has passed. */
interface Deadline {
  aborted: boolean
}

async function resolveAllowed (
  destination: ForwardProxyDestination,
  settings: DestinationConnectorSettings,
  abort: AbortSignal,
  deadline: Deadline
): Promise<ResolvedAddress[]> {
  const literalFamily = isIP(destination.host)
  if (literalFamily === 4 || literalFamily === 6) {
    settings.policy.checkAddress(destination.host)
    return [{ address: destination.host, family: literalFamily }]
  }
  let resolved: ResolvedAddress[]
  try {
    resolved = await raceAbort(settings.resolver(destination.host, abort), abort)
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

function dial ({ host, port, family, onread }: DialTarget, abort: AbortSignal, deadline: Deadline): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, family, allowHalfOpen: true, noDelay: true, ...(onread === undefined ? {} : { onread }) })
    const onAbort = (): void => {
      socket.destroy()
      reject(deadline.aborted
        ? new ProxyError('connection_timeout', 'Connecting to the destination timed out.')
        : new ProxyError('connection_terminated', 'The client went away while connecting.'))
    }
    if (abort.aborted) return onAbort()
    abort.addEventListener('abort', onAbort, { once: true })
    socket.once('connect', () => {
      abort.removeEventListener('abort', onAbort)
      socket.removeListener('error', onError)
      resolve(socket)
    })
    const onError = (error: Error): void => {
      abort.removeEventListener('abort', onAbort)
      socket.destroy()
      reject(error)
    }
    socket.once('error', onError)
  })
}

function raceAbort<T> (promise: Promise<T>, abort: AbortSignal): Promise<T> {
  if (abort.aborted) return Promise.reject(abort.reason)
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(abort.reason)
    abort.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => { abort.removeEventListener('abort', onAbort); resolve(value) },
      (error: unknown) => { abort.removeEventListener('abort', onAbort); reject(error) }
    )
  })
}
