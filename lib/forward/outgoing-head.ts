// The request head the proxy sends on, built in one pass (hop-by-hop removal, the
// application's hook edits, Host, Max-Forwards, Via, trace context), and the rules every header
// name and value the proxy sends must follow. The response head to the client is in
// client-response-head.ts.

import { isSpanContextValid, type Span } from '@opentelemetry/api'
import type { FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import { ProxyError } from '../protocol/errors'
import { formatHostHeader, isEquivalentAuthority } from '../protocol/hosts'
import { formatTraceParent } from '../telemetry/traces'

/** Where a request goes, and what the proxy does with its Max-Forwards. */
export interface OutgoingHeadTarget {
  readonly destination: ForwardProxyDestination
  /** The port an omitted `Host` port stands for (80 for http, 443 for https). */
  readonly defaultPort: number
  /**
   * The Max-Forwards value to send (already decremented), undefined for none, or `'as-received'`
   * to pass the client's header through untouched (requests inside intercepted tunnels).
   */
  readonly maxForwards: string | undefined | 'as-received'
}

/** The request head the proxy sends on, and what the rest of the exchange needs from it. */
export interface OutgoingHead {
  /** Flat name/value pairs, names as received, order kept: what transforms get and undici sends. */
  readonly headers: string[]
  /** The request's headers as Node parsed them, before any hook touched them. */
  readonly received: ReceivedHeaders
  /** This proxy's `Via` entry, added to the response as well. */
  readonly via: string
}

// Replaced by the proxy (host, max-forwards) or handled by it (expect: Node answers 100-continue).
const REPLACED = new Set(['host', 'max-forwards', 'expect'])
const TRACE_CONTEXT = new Set(['traceparent', 'tracestate'])

/**
 * Builds the request head the proxy sends, in one pass over the client's raw headers:
 * hop-by-hop headers and every name listed in `Connection` removed first (`Proxy-Authorization`
 * among them), then `Host` from the target (the default port omitted), `Max-Forwards`, our
 * `Via` and, with `span`, W3C trace context naming the forwarded request's span as parent, so
 * nothing the client lists in `Connection` can strip what the proxy adds. HTTP/2
 * pseudo-headers are dropped and HTTP/2's separate `cookie` fields joined into one
 * (RFC 9113 section 8.2.3), since requests always leave over HTTP/1.1.
 *
 * What the application's hooks did to `request.headers` applies on top (see
 * {@link hookHeaderEdits}): a removed name is left out, a replaced one is sent with the hook's
 * value where it first appeared (the received name's case kept), an added one after the
 * received headers. The same removal rules apply to them, so a hook cannot add a hop-by-hop or
 * `Connection`-listed header either. Used for forwarded requests and WebSocket upgrades alike.
 * @throws ProxyError 500 `proxy_internal_error` when a hook left the headers unusable.
 */
export function buildOutgoingHead (request: FastifyRequest, target: OutgoingHeadTarget, pseudonym: string, span: Span | undefined): OutgoingHead {
  const raw = request.raw
  const rawHeaders = raw.rawHeaders
  const { headers: received, lowerNames, listsConnection, repeatsHost } = readReceivedHead(rawHeaders, raw.httpVersionMajor)
  // RFC 9112 section 3.2: Node keeps the first; a next hop that took another would see another request.
  if (repeatsHost) throw new ProxyError('http_request_error', 'The request carries more than one Host header.', { details: 'repeated Host' })
  const dropped = listsConnection ? hopByHopNames(rawHeaders) : HOP_BY_HOP
  const via = viaEntry(raw.httpVersion, pseudonym)
  const context = span?.spanContext()
  const traceContext = context !== undefined && isSpanContextValid(context) ? context : undefined
  const edits = hookHeaderEdits(received, request.headers, target)
  const { destination } = target
  const host = formatHostHeader(destination.host, destination.port, target.defaultPort)

  const keepMaxForwards = target.maxForwards === 'as-received'
  const ownTraceContext = traceContext !== undefined
  const headers: string[] = ['host', host]
  // The names a hook's value was sent under already; made only when a hook replaced one.
  let replaced: Set<string> | undefined
  let cookieIndex = -1
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    const lower = lowerNames[i >> 1] as string
    if (!isSent(lower, dropped, keepMaxForwards, ownTraceContext) || edits.removed.has(lower) || replaced?.has(lower) === true) continue
    const replacement = edits.changed.size === 0 ? undefined : edits.changed.get(lower)
    if (replacement !== undefined) {
      (replaced ??= new Set()).add(lower)
      for (const value of replacement) headers.push(name, value)
      continue
    }
    const value = rawHeaders[i + 1] as string
    if (lower === 'cookie' && cookieIndex !== -1) {
      headers[cookieIndex] = `${headers[cookieIndex] as string}; ${value}`
      continue
    }
    if (lower === 'cookie') cookieIndex = headers.length + 1
    headers.push(name, value)
  }
  if (edits.changed.size > 0) {
    for (const [name, values] of edits.changed) {
      if (replaced?.has(name) === true || !isSent(name, dropped, keepMaxForwards, ownTraceContext)) continue
      for (const value of values) headers.push(name, value)
    }
  }
  if (target.maxForwards !== undefined && !keepMaxForwards) headers.push('max-forwards', target.maxForwards)
  headers.push('via', via)
  if (traceContext !== undefined) {
    headers.push('traceparent', formatTraceParent(traceContext))
    const state = traceContext.traceState?.serialize()
    if (state !== undefined && state !== '') headers.push('tracestate', state)
  }
  return { headers, received, via }
}

/**
 * True when a received (or hook-set) header with this lower-case name goes on: not a
 * pseudo-header, not hop-by-hop or `Connection`-listed, not one the proxy sets itself
 * (`Max-Forwards` is kept when it is passed through as received), and not trace context when
 * the proxy sends its own.
 */
function isSent (lower: string, dropped: HeaderNames, keepMaxForwards: boolean, ownTraceContext: boolean): boolean {
  return !lower.startsWith(':') && !dropped.has(lower) &&
    !(REPLACED.has(lower) && !(keepMaxForwards && lower === 'max-forwards')) &&
    !(ownTraceContext && TRACE_CONTEXT.has(lower))
}

/** A header object as Node builds it for a request: lower-case names, repeats joined or listed. */
export type ReceivedHeaders = Readonly<Record<string, string | string[]>>

// Node 20's HTTP/1.1 parser (_http_incoming.js matchKnownFields) keeps the first value of these
// and drops repeats; `set-cookie` becomes an array, `cookie` is joined with '; ', any other
// repeat with ', '. test/forward-received-headers-match-node.test.ts checks this against Node.
const HTTP1_FIRST_WINS = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host',
  'if-modified-since', 'if-unmodified-since', 'last-modified', 'location', 'max-forwards',
  'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent'
])

// Node 20's HTTP/2 header object (internal/http2/util.js toHeaderObject, kSingleValueHeaders):
// the same joining, with its own list of single-value fields.
const HTTP2_FIRST_WINS = new Set([
  ':status', ':method', ':authority', ':scheme', ':path', ':protocol',
  'access-control-allow-credentials', 'access-control-max-age', 'access-control-request-method',
  'age', 'authorization', 'content-encoding', 'content-language', 'content-length', 'content-location',
  'content-md5', 'content-range', 'content-type', 'date', 'dnt', 'etag', 'expires', 'from', 'host',
  'if-match', 'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since', 'last-modified',
  'location', 'max-forwards', 'proxy-authorization', 'range', 'referer', 'retry-after', 'tk',
  'upgrade-insecure-requests', 'user-agent', 'x-content-type-options'
])

/**
 * Rebuilds, from a request's `rawHeaders`, the header object Node gave the request before any
 * hook could touch it (`IncomingMessage.headers` for HTTP/1.x, `Http2ServerRequest.headers`
 * for HTTP/2). Comparing it with `request.headers` at forward time tells what the application's
 * hooks added, replaced or removed.
 */
export function receivedHeaderObject (rawHeaders: readonly string[], httpVersionMajor: number): ReceivedHeaders {
  return readReceivedHead(rawHeaders, httpVersionMajor).headers
}

/** What one pass over a request's raw headers gives the head builder. */
interface ReceivedHead {
  /** See {@link receivedHeaderObject}. */
  readonly headers: ReceivedHeaders
  /** Each raw header's name in lower case, in order (one per name/value pair). */
  readonly lowerNames: readonly string[]
  /** True when a `Connection` or `Proxy-Connection` header may list more hop-by-hop names. */
  readonly listsConnection: boolean
  /** True when `Host` came more than once. */
  readonly repeatsHost: boolean
}

// Each name is lower-cased once here, not again by each later look at the head.
function readReceivedHead (rawHeaders: readonly string[], httpVersionMajor: number): ReceivedHead {
  const firstWins = httpVersionMajor === 2 ? HTTP2_FIRST_WINS : HTTP1_FIRST_WINS
  const headers: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>
  const lowerNames: string[] = []
  let listsConnection = false
  let repeatsHost = false
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase()
    lowerNames.push(name)
    const value = rawHeaders[i + 1] as string
    if ((name === 'connection' || name === 'proxy-connection') && !listsNothingMore(value)) listsConnection = true
    const existing = headers[name]
    if (existing === undefined) headers[name] = name === 'set-cookie' ? [value] : value
    else if (Array.isArray(existing)) existing.push(value)
    else if (firstWins.has(name)) repeatsHost ||= name === 'host'
    else headers[name] = `${existing}${name === 'cookie' ? '; ' : ', '}${value}`
  }
  return { headers, lowerNames, listsConnection, repeatsHost }
}

/**
 * Hop-by-hop header names (RFC 9110 section 7.6.1), plus the non-standard ones proxies must
 * drop too: never forwarded in either direction, and never set by a transform or header rule.
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection', 'proxy-connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'proxy-authenticate', 'proxy-authorization', 'http2-settings'
])

/** A set of lower-cased header names, as far as checking a name needs. */
export interface HeaderNames {
  has: (name: string) => boolean
}

/**
 * Names of the headers a message says are hop-by-hop: the fixed list plus every token of every
 * `Connection` (and `Proxy-Connection`) header exactly as received, lower-cased. A message
 * without those headers gets the fixed list itself (nothing copied per request).
 */
function hopByHopNames (rawHeaders: readonly string[]): HeaderNames {
  let listed: Set<string> | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]?.toLowerCase()
    if (name !== 'connection' && name !== 'proxy-connection') continue
    for (const token of (rawHeaders[i + 1] ?? '').split(',')) {
      const listedName = token.trim().toLowerCase()
      // `Connection: keep-alive` (most responses) lists nothing the fixed list lacks.
      if (listedName !== '' && !HOP_BY_HOP.has(listedName)) (listed ??= new Set()).add(listedName)
    }
  }
  if (listed === undefined) return HOP_BY_HOP
  const names = listed
  return { has: (name) => HOP_BY_HOP.has(name) || names.has(name) }
}

/**
 * True when a `Connection` value is the usual `keep-alive`, which names nothing beyond the
 * fixed hop-by-hop list: no walk over the headers for it. (Not `close`: a field named `Close`
 * would have to go too.)
 */
function listsNothingMore (value: string): boolean {
  return value === 'keep-alive' || value.trim().toLowerCase() === 'keep-alive'
}

/** The `Connection`-listed names of an already-parsed header object (an upstream response). */
export function hopByHopNamesOfObject (headers: Readonly<Record<string, string | string[] | undefined>>): HeaderNames {
  const { connection } = headers
  const proxyConnection = headers['proxy-connection']
  // Most responses have neither, or a `Connection: keep-alive`: nothing is allocated for them.
  if ((connection === undefined || (typeof connection === 'string' && listsNothingMore(connection))) &&
    (proxyConnection === undefined || (typeof proxyConnection === 'string' && listsNothingMore(proxyConnection)))) return HOP_BY_HOP
  const raw: string[] = []
  for (const name of ['connection', 'proxy-connection']) {
    const value = headers[name]
    if (value !== undefined) raw.push(name, Array.isArray(value) ? value.join(',') : value)
  }
  return hopByHopNames(raw)
}

/** A valid header field name: an RFC 9110 token. */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * A character Node refuses in a field value: anything but tab, visible ASCII, space and obs-text
 * bytes (line breaks for header injection, NUL, other controls, DEL, characters past U+00FF).
 * A transform's or a header rule's value holding one would make Node refuse the message after
 * the transform, failing the request for a reason nobody can see.
 */
export const UNSAFE_VALUE = /[^\t\x20-\x7e\x80-\xff]/

/** What the application's hooks did to `request.headers`, in lower-case names. */
interface HookHeaderEdits {
  /** Names the hooks deleted. */
  readonly removed: ReadonlySet<string>
  /** Names the hooks replaced or added, with the field values to send instead (one line each). */
  readonly changed: ReadonlyMap<string, readonly string[]>
}

function hookRefused (details: string): ProxyError {
  return new ProxyError('proxy_internal_error', 'An application hook left the request headers unusable.', { details })
}

/**
 * Compares `request.headers` as the hooks left it (`current`) with the object Node built from
 * the request as received, and returns the differences. Pseudo-headers are ignored (never
 * forwarded). Two names stay the proxy's: `Content-Length` frames the body the proxy streams
 * (deleting it changes nothing, another value is refused), and `Host` always comes from the
 * target (an equivalent authority changes nothing; another one is refused, so a hook can never
 * send a request to another virtual host than the tunnel or absolute target names).
 * Hop-by-hop names are left to the header builder, which drops them whoever set them.
 * @throws ProxyError 500 `proxy_internal_error` for a refused `Host` or `Content-Length`, a
 * name that is not a token, or a value that is not a string or number or holds a character Node
 * refuses in a field value ({@link UNSAFE_VALUE}).
 */
function hookHeaderEdits (
  received: ReceivedHeaders,
  current: Readonly<Record<string, unknown>>,
  target: Pick<OutgoingHeadTarget, 'destination' | 'defaultPort'>
): HookHeaderEdits {
  // Allocated only when a hook edited something: the usual request compares strings and returns.
  let removed: Set<string> | undefined
  let changed: Map<string, readonly string[]> | undefined
  for (const name of Object.keys(received)) {
    if (current[name] !== undefined || name.startsWith(':') || name === 'content-length' || name === 'host') continue
    removed ??= new Set()
    removed.add(name)
  }
  for (const name of Object.keys(current)) {
    const value = current[name]
    if (value === undefined || (typeof value === 'string' && value === received[name]) || name.startsWith(':')) continue
    const values = fieldValues(name, value)
    if (sameValue(received[name], values)) continue
    if (!TOKEN.test(name)) throw hookRefused('a hook set an invalid header name')
    changed ??= new Map()
    changed.set(name.toLowerCase(), values)
  }
  if (changed === undefined) return { removed: removed ?? NO_NAMES, changed: NO_CHANGES }

  if (changed.has('content-length')) throw hookRefused('a hook changed content-length')
  const host = changed.get('host')
  if (host !== undefined) {
    const [only] = host
    if (host.length !== 1 || only === undefined || !isEquivalentAuthority(only, target.destination, target.defaultPort)) {
      throw hookRefused('a hook set a Host for another authority')
    }
    changed.delete('host')
  }
  return { removed: removed ?? NO_NAMES, changed }
}

const NO_NAMES: ReadonlySet<string> = new Set()
const NO_CHANGES: ReadonlyMap<string, readonly string[]> = new Map()

function fieldValues (name: string, value: unknown): string[] {
  const items: unknown[] = Array.isArray(value) ? value : [value]
  const values = items.map((item) => {
    if (typeof item === 'number' && Number.isFinite(item)) return String(item)
    if (typeof item !== 'string' || UNSAFE_VALUE.test(item)) throw hookRefused('a hook set an invalid header value')
    return item
  })
  // HTTP/1.1 carries one Cookie field (RFC 6265 section 5.4).
  return name.toLowerCase() === 'cookie' && values.length > 1 ? [values.join('; ')] : values
}

function sameValue (received: string | string[] | undefined, values: readonly string[]): boolean {
  if (received === undefined) return false
  const list = Array.isArray(received) ? received : [received]
  return list.length === values.length && list.every((item, index) => item === values[index])
}

/** The `Via` entry this proxy adds for a message received over `httpVersion` (e.g. `1.1 fastify-forward-proxy`). */
function viaEntry (httpVersion: string, pseudonym: string): string {
  if (pseudonym !== viaEntries.pseudonym) viaEntries = { pseudonym, http10: `1.0 ${pseudonym}`, http11: `1.1 ${pseudonym}`, http2: `2 ${pseudonym}` }
  return httpVersion === '1.0' ? viaEntries.http10 : httpVersion.startsWith('2') ? viaEntries.http2 : viaEntries.http11
}

// The entries of the last pseudonym seen (one per process, unless reconfigured): made once, not per message.
let viaEntries = { pseudonym: '', http10: '', http11: '', http2: '' }

/**
 * True when a `Via` value already lists this proxy's pseudonym: the request has looped
 * back to us. Chained proxies must therefore use distinct pseudonyms.
 */
export function viaListsPseudonym (via: string | string[] | undefined, pseudonym: string): boolean {
  if (via === undefined) return false
  const wanted = pseudonym.toLowerCase()
  const values = Array.isArray(via) ? via : [via]
  return values.some((value) => value.split(',').some((entry) => {
    const received = entry.trim().split(/\s+/)[1]
    return received !== undefined && received.toLowerCase() === wanted
  }))
}

/** What Max-Forwards asks of the proxy for one request: forward it, or answer it at 0. */
export type MaxForwardsDecision =
  | { readonly action: 'forward', readonly value: string | undefined }
  | { readonly action: 'answer-options' }
  | { readonly action: 'refuse-trace' }

/**
 * Applies Max-Forwards to TRACE and OPTIONS: a valid value (1*DIGIT) is decremented; at 0 the
 * proxy answers itself (OPTIONS: empty 200; TRACE: 405, it never echoes a request). An invalid
 * value, or any other method, is forwarded unchanged. `value` is the header to send, if any.
 */
export function decideMaxForwards (method: string, header: string | undefined): MaxForwardsDecision {
  if ((method !== 'TRACE' && method !== 'OPTIONS') || header === undefined || !/^[0-9]+$/.test(header)) {
    return { action: 'forward', value: header }
  }
  const remaining = BigInt(header)
  if (remaining === 0n) return method === 'OPTIONS' ? { action: 'answer-options' } : { action: 'refuse-trace' }
  return { action: 'forward', value: (remaining - 1n).toString() }
}
