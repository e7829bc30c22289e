// Upstream proxies: which destinations go through another proxy (rules, the environment's
// HTTPS_PROXY / HTTP_PROXY / NO_PROXY, or the application's function), and how a connection is
// opened through one (CONNECT, with the upstream's own credentials).

import { connect as netConnect, isIP, type NetConnectOpts, type OnReadOpts, type Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import type { FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyUpstreamRule, ForwardProxyUpstreamSelector } from '../../types/upstream'
import { ForwardProxyOptionsError, ProxyError, isProxyError } from '../protocol/errors'
import { holdsCertificates } from '../certificates/pem'
import { proxyErrorFromNetworkError } from '../protocol/network-errors'
import { certificateVerdictCode, serverIdentityError } from './server-identity'
import { canonicalHost, compileHostPattern, formatAuthority, matchesAny, type HostPattern } from '../protocol/hosts'

/** An upstream proxy, parsed from its URL. */
export interface UpstreamProxy {
  readonly protocol: 'http:' | 'https:'
  /** Host name or address to dial (IPv6 without brackets). */
  readonly host: string
  readonly port: number
  /** `host:port` without credentials: what errors (`next-hop`) and logs name. */
  readonly label: string
  /** `Basic ...` from the URL's credentials, sent as `Proxy-Authorization`; never logged. */
  readonly authorization: string | undefined
  /** CA certificates trusted for an `https:` upstream instead of Node's roots. */
  readonly ca: string | Buffer | undefined
}

/**
 * What goes through the upstream: `http` for absolute-form forwarding (`HTTP_PROXY` in the
 * environment), `tunnel` for CONNECT tunnels and the TLS connections of intercepted requests
 * (`HTTPS_PROXY`).
 */
type UpstreamKind = 'http' | 'tunnel'

/** The compiled `upstreamProxies` option. */
export interface UpstreamRoutes {
  /** The upstream for a destination, or null to connect directly. */
  routeFor: (destination: ForwardProxyDestination, request: FastifyRequest | null, kind: UpstreamKind) => UpstreamProxy | null | Promise<UpstreamProxy | null>
  /**
   * An upstream chosen before, by its `upstreamOrigin` (how the forwarding dispatcher, which
   * pools connections by origin, finds the upstream's TLS settings).
   */
  byOrigin: (origin: string) => UpstreamProxy | undefined
}

/** `http://host:port` or `https://host:port`: the origin its connections are pooled under. */
export function upstreamOrigin (upstream: UpstreamProxy): string {
  return `${upstream.protocol}//${upstream.label}`
}

function originIndex (upstreams: ReadonlyArray<UpstreamProxy | null>): (origin: string) => UpstreamProxy | undefined {
  const index = new Map(upstreams.filter((upstream): upstream is UpstreamProxy => upstream !== null).map((upstream) => [upstreamOrigin(upstream), upstream]))
  return (origin) => index.get(origin)
}

/**
 * Parses an upstream URL: `direct` (null), `http://[user:password@]host:port` or
 * `https://[user:password@]host:port`, nothing else (no path, query or fragment).
 * @throws ForwardProxyOptionsError naming `option`, never quoting the credentials.
 */
function parseUpstreamUrl (text: unknown, option: string, ca?: string | Buffer): UpstreamProxy | null {
  if (text === 'direct') return null
  const problem = 'must be "direct", http://[user:password@]host:port or https://[user:password@]host:port'
  if (typeof text !== 'string') throw new ForwardProxyOptionsError(option, problem)
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new ForwardProxyOptionsError(option, problem)
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '' || (url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    throw new ForwardProxyOptionsError(option, problem)
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port)
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  let user: string
  let password: string
  try {
    user = decodeURIComponent(url.username)
    password = decodeURIComponent(url.password)
  } catch {
    throw new ForwardProxyOptionsError(option, 'has credentials that are not valid percent-encoding (write a % in them as %25)')
  }
  return {
    protocol: url.protocol,
    host,
    port,
    label: formatAuthority(canonicalHost(url.hostname) ?? host, port),
    authorization: user === '' && password === '' ? undefined : `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
    ca
  }
}

/**
 * Validates the `upstreamProxies` option: rules, `'environment'` (read now from `env`) or a
 * function; null when absent.
 * @throws ForwardProxyOptionsError naming the bad entry.
 */
export function compileUpstreamProxies (option: unknown, env: NodeJS.ProcessEnv = process.env): UpstreamRoutes | null {
  if (option === undefined) return null
  if (option === 'environment') return fromEnvironment(env)
  if (typeof option === 'function') return fromSelector(option as ForwardProxyUpstreamSelector)
  if (!Array.isArray(option)) throw new ForwardProxyOptionsError('upstreamProxies', 'must be an array of { hosts, url, ca? }, "environment" or a function (destination, request) => url')
  const rules = option.map((rule: unknown, index) => compileRule(rule, `upstreamProxies[${index}]`))
  refuseConflictingTrust(rules.map((rule) => rule.upstream))
  return {
    routeFor: (destination) => rules.find((rule) => matchesAny(rule.hosts, destination.host))?.upstream ?? null,
    byOrigin: originIndex(rules.map((rule) => rule.upstream))
  }
}

/**
 * One upstream endpoint presents one certificate: two rules naming the same `https://host:port`
 * with different `ca` cannot both be right, and pooled connections to it would be judged by
 * whichever rule dialed them.
 * @throws ForwardProxyOptionsError naming the second rule's `ca`.
 */
function refuseConflictingTrust (upstreams: ReadonlyArray<UpstreamProxy | null>): void {
  const firsts = new Map<string, { index: number, ca: string | undefined }>()
  upstreams.forEach((upstream, index) => {
    if (upstream === null) return
    const origin = upstreamOrigin(upstream)
    const ca = upstream.ca?.toString()
    const first = firsts.get(origin)
    if (first === undefined) {
      firsts.set(origin, { index, ca })
    } else if (first.ca !== ca) {
      throw new ForwardProxyOptionsError(`upstreamProxies[${index}].ca`, `differs from upstreamProxies[${first.index}]'s for the same upstream ${origin}: give every rule for one upstream the same ca`)
    }
  })
}

function compileRule (rule: unknown, option: string): { hosts: HostPattern[], upstream: UpstreamProxy | null } {
  if (typeof rule !== 'object' || rule === null) throw new ForwardProxyOptionsError(option, 'must be an object { hosts, url, ca? }')
  const { hosts, url, ca, ...rest } = rule as ForwardProxyUpstreamRule & Record<string, unknown>
  const unknownKey = Object.keys(rest)[0]
  if (unknownKey !== undefined) throw new ForwardProxyOptionsError(`${option}.${unknownKey}`, 'is not a known option (known: hosts, url, ca)')
  if (!Array.isArray(hosts) || hosts.length === 0) throw new ForwardProxyOptionsError(`${option}.hosts`, 'must be a non-empty array of host patterns')
  const patterns = hosts.map((text: unknown, index) => {
    const pattern = typeof text === 'string' ? compileHostPattern(text) : null
    if (pattern === null) throw new ForwardProxyOptionsError(`${option}.hosts[${index}]`, 'is not a host pattern (example.com, *.example.com, *, an IP literal or a CIDR range)')
    return pattern
  })
  if (ca !== undefined && ((typeof ca !== 'string' && !Buffer.isBuffer(ca)) || !holdsCertificates(ca))) throw new ForwardProxyOptionsError(`${option}.ca`, 'must be PEM text or a Buffer holding at least one certificate (CERTIFICATE blocks, each parsable)')
  return { hosts: patterns, upstream: parseUpstreamUrl(url, `${option}.url`, ca) }
}

function fromSelector (selector: ForwardProxyUpstreamSelector): UpstreamRoutes {
  const parsed = new Map<string, UpstreamProxy | null>()
  const parse = (url: string | null): UpstreamProxy | null => {
    if (url === null) return null
    let upstream = parsed.get(url)
    if (upstream === undefined) {
      try {
        upstream = parseUpstreamUrl(url, 'upstreamProxies (the function\'s result)')
      } catch (error) {
        throw new ProxyError('proxy_internal_error', 'The proxy\'s upstream choice is unusable.', { cause: error })
      }
      parsed.set(url, upstream)
    }
    return upstream
  }
  return {
    async routeFor (destination, request) {
      return parse(await selector(destination, request))
    },
    byOrigin: (origin) => [...parsed.values()].find((upstream) => upstream !== null && upstreamOrigin(upstream) === origin) ?? undefined
  }
}

/**
 * The environment's proxies, as curl reads them: `https_proxy` / `HTTPS_PROXY` for tunnels,
 * `http_proxy` (lower case only, as curl: a web server may set `HTTP_PROXY` from a request's
 * `Proxy` header) for http:// forwarding, `all_proxy` / `ALL_PROXY` for either when unset, and
 * `no_proxy` / `NO_PROXY`: `*`, or host names (each also covering its subdomains, with or
 * without a leading dot), IP addresses and CIDR ranges, separated by commas.
 */
function fromEnvironment (env: NodeJS.ProcessEnv): UpstreamRoutes {
  const read = (...names: string[]): string | undefined => names.map((name) => env[name]).find((value) => value !== undefined && value !== '')
  const all = read('all_proxy', 'ALL_PROXY')
  const tunnel = read('https_proxy', 'HTTPS_PROXY') ?? all
  const http = read('http_proxy') ?? all
  const upstreams = {
    tunnel: tunnel === undefined ? null : parseUpstreamUrl(tunnel, 'upstreamProxies: "environment" (HTTPS_PROXY)'),
    http: http === undefined ? null : parseUpstreamUrl(http, 'upstreamProxies: "environment" (HTTP_PROXY)')
  }
  const noProxy = (read('no_proxy', 'NO_PROXY') ?? '').split(',').map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== '')
  const bypassAll = noProxy.includes('*')
  const addresses = noProxy.map((entry) => isIP(entry) !== 0 || entry.includes('/') ? compileHostPattern(entry) : null).filter((pattern): pattern is HostPattern => pattern !== null)
  const names = noProxy.filter((entry) => isIP(entry) === 0 && !entry.includes('/')).map((entry) => entry.replace(/^\*?\./, ''))
  const bypassed = (host: string): boolean => bypassAll || matchesAny(addresses, host) || names.some((name) => host === name || host.endsWith(`.${name}`))
  return {
    routeFor: (destination, _request, kind) => bypassed(destination.host) ? null : upstreams[kind],
    byOrigin: originIndex([upstreams.tunnel, upstreams.http])
  }
}

/** What aborts an attempt through an upstream (the client left): the connector's Cancellation. */
export interface CancelSignal {
  readonly aborted: boolean
  /** Calls `listener` on abort; returns a function that stops listening. */
  onAbort (listener: () => void): () => void
}

// An upstream's answer to CONNECT larger than this is not a proxy's answer.
const MAX_RESPONSE_HEAD = 16 * 1024

/**
 * Opens a connection to `upstream` itself: TLS for an `https://` upstream (SNI from a name,
 * validated against its `ca` or Node's roots, HTTP/1.1 by ALPN), plain TCP otherwise with
 * `plain`'s options. `readyEvent` is the event after which it can carry a request.
 */
export function dialUpstream (upstream: UpstreamProxy, plain: Omit<NetConnectOpts, 'host' | 'port'> = {}): { socket: Socket, readyEvent: 'secureConnect' | 'connect' } {
  if (upstream.protocol === 'https:') {
    const socket = tlsConnect({ host: upstream.host, port: upstream.port, ...(isIP(upstream.host) === 0 ? { servername: upstream.host } : {}), ...(upstream.ca === undefined ? {} : { ca: upstream.ca }), checkServerIdentity: serverIdentityError, ALPNProtocols: ['http/1.1'] })
    return { socket, readyEvent: 'secureConnect' }
  }
  return { socket: netConnect({ noDelay: true, ...plain, host: upstream.host, port: upstream.port }), readyEvent: 'connect' }
}

/**
 * The error for an upstream proxy that could not be reached, naming it in `nextHop`: 502
 * `tls_certificate_error` with the verdict's code when an `https://` upstream's certificate
 * failed validation, otherwise the network error's type (`connection_refused`, `dns_error`...).
 */
export function upstreamUnreachable (error: Error, nextHop: string): ProxyError {
  if (isProxyError(error)) return error
  const verdict = certificateVerdictCode(error)
  if (verdict !== undefined) {
    return new ProxyError('tls_certificate_error', 'The upstream proxy presented a certificate that failed validation.', { details: verdict, nextHop, cause: error })
  }
  const mapped = proxyErrorFromNetworkError(error)
  return new ProxyError(mapped.errorType, `The upstream proxy could not be reached: ${mapped.message}`, { status: mapped.status, ...(mapped.details === undefined ? {} : { details: mapped.details }), nextHop, cause: error })
}

/**
 * Opens a tunnel to `destination` through `upstream`: connects to it (TLS for `https:`,
 * validated against `ca` or Node's roots), sends CONNECT with the upstream's credentials, and
 * resolves with the socket once the upstream answered 2xx, any bytes it sent after its answer
 * put back for the next reader. All within `timeout` ms; `cancel` aborts it (the client left).
 * `onread`, for an `http:` upstream, is the socket's `onread` option (an opaque tunnel's
 * destination reader): the answer is read through it, and the bytes after it are handed to its
 * callback, with reading stopped until the reader's owner resumes the socket.
 * @throws ProxyError naming the upstream in `nextHop`: 502 `destination_unavailable` for a
 * non-2xx answer (`details` gives the status), the network error's type otherwise
 * (`connection_refused`, `dns_error`, `tls_certificate_error`...), 504 `connection_timeout`.
 */
export function connectThroughUpstream (
  upstream: UpstreamProxy,
  destination: ForwardProxyDestination,
  timeout: number,
  cancel?: CancelSignal,
  onread?: OnReadOpts,
  isOwnListener?: (address: string, port: number) => boolean
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const nextHop = upstream.label
    const reader = upstream.protocol === 'https:' ? undefined : onread
    const { socket, readyEvent } = dialUpstream(upstream, {
      allowHalfOpen: true,
      ...(reader === undefined
        ? {}
        : {
            onread: {
              buffer: reader.buffer,
              callback: (count: number, buffer: Uint8Array): boolean => {
                if (settled) return reader.callback(count, buffer)
                onData(Buffer.from(buffer.subarray(0, count)))
                return !settled
              }
            }
          })
    })
    let received = Buffer.alloc(0)
    let settled = false
    let stopListening = (): void => {}
    const finish = (error: ProxyError | null): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      stopListening()
      socket.removeListener('data', onData)
      socket.removeListener('error', onError)
      socket.removeListener('close', onClose)
      socket.removeListener('end', onClose)
      if (error !== null) {
        socket.on('error', () => {})
        socket.destroy()
        reject(error)
        return
      }
      socket.pause()
      resolve(socket)
    }
    const onError = (error: Error): void => finish(upstreamUnreachable(error, nextHop))
    const onClose = (): void => finish(new ProxyError('connection_terminated', 'The upstream proxy closed the connection before answering CONNECT.', { status: 502, nextHop }))
    const onAbort = (): void => finish(new ProxyError('connection_terminated', 'The client went away while connecting.', { nextHop }))
    const timer = setTimeout(() => finish(new ProxyError('connection_timeout', 'The upstream proxy did not answer in time.', { nextHop })), timeout)
    const onData = (chunk: Buffer): void => {
      received = Buffer.concat([received, chunk])
      let end = received.indexOf('\r\n\r\n')
      let status = end === -1 ? 0 : statusOf(received, end)
      // Interim (1xx) answers come before the final one (RFC 9110 section 15.2): skipped.
      while (status >= 100 && status < 200 && status !== 101) {
        received = received.subarray(end + 4)
        end = received.indexOf('\r\n\r\n')
        status = end === -1 ? 0 : statusOf(received, end)
      }
      if (end === -1) {
        if (received.length > MAX_RESPONSE_HEAD) finish(new ProxyError('http_protocol_error', 'The upstream proxy answered CONNECT with an invalid head.', { status: 502, nextHop }))
        return
      }
      if (status === 0) return finish(new ProxyError('http_protocol_error', 'The upstream proxy answered CONNECT with an invalid head.', { status: 502, nextHop }))
      if (status < 200 || status > 299) {
        return finish(new ProxyError('destination_unavailable', `The upstream proxy refused the tunnel (${status}).`, { status: 502, details: `upstream proxy answered ${status}`, nextHop }))
      }
      const rest = received.subarray(end + 4)
      finish(null)
      if (rest.length === 0) return
      if (reader === undefined) socket.unshift(rest)
      else reader.callback(rest.length, rest)
    }
    if (cancel?.aborted === true) return onAbort()
    stopListening = cancel?.onAbort(onAbort) ?? stopListening
    socket.once('error', onError)
    socket.once('close', onClose)
    // Half-open is allowed for the tunnel; an end before the whole answer is a close.
    socket.once('end', onClose)
    socket.once(readyEvent, () => {
      if (isOwnListener?.(socket.remoteAddress ?? '', socket.remotePort ?? 0) === true) return finish(upstreamIsThisProxy(nextHop))
      const authority = formatAuthority(destination.host, destination.port)
      const lines = [`CONNECT ${authority} HTTP/1.1`, `Host: ${authority}`, ...(upstream.authorization === undefined ? [] : [`Proxy-Authorization: ${upstream.authorization}`])]
      socket.write(`${lines.join('\r\n')}\r\n\r\n`)
      if (reader === undefined) socket.on('data', onData)
    })
  })
}

/** The status code of the response head that ends at `end` in `received`; 0 when it is not one. */
function statusOf (received: Buffer, end: number): number {
  return Number(/^HTTP\/1\.[01] (\d{3})[ \r]/.exec(received.subarray(0, end + 2).toString('latin1'))?.[1] ?? 0)
}

/**
 * The 508 for an upstream proxy that is this proxy's own listener: a request sent there would
 * come back to this proxy and be sent there again, each time holding one more tunnel.
 */
export function upstreamIsThisProxy (nextHop: string): ProxyError {
  return new ProxyError('proxy_loop_detected', 'The upstream proxy is this proxy itself.', { details: 'the upstream proxy is this proxy', nextHop })
}
