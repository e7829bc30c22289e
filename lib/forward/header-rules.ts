// The built-in header-rules transform (the configuration file's `headers` rules): rules checked
// when they are compiled, the hosts each applies to, and its edits of the request head, both as
// the transform contract has them and on the flat head the forwarding path builds.

import type { FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type {
  ForwardProxyIncomingResponse,
  ForwardProxyOutgoingRequest,
  ForwardProxyRequestTransform
} from '../../types/interception'
import type { ForwardProxyHeaderRule } from '../../types/header-rules'
import { ProxyError, ForwardProxyRuleError } from '../protocol/errors'
import { refusedBy } from '../protocol/refusals'
import { matchesAny, type HostPattern, compileHostPatterns } from '../protocol/hosts'
import { HOP_BY_HOP, TOKEN, UNSAFE_VALUE } from './outgoing-head'

// Rule values become header field values as given, so they are checked against what Node accepts
// in one (UNSAFE_VALUE) at start-up, instead of failing every matching request.

// Framing and routing are the proxy's: a rule changing them would break or re-route the message.
const REQUEST_NAMES_REFUSED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'host', 'content-length'])
const RESPONSE_NAMES_REFUSED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'content-length'])

// Where a header-rules transform says which hosts its rules name, kept off the public type.
const NAMES_HOST = Symbol('header rules name host')

// Marks a transform whose edits are checked when it is built (the header rules: names that are
// not the proxy's, values Node accepts) and that never reads its AbortSignal.
const CHECKED_AT_START = Symbol('edits checked at start')

// Where a header-rules transform keeps its edit of the flat head, kept off the public type.
const EDIT_HEAD = Symbol('header rules edit of the flat head')

/** A header-rules transform, with what the proxy reads off it besides the public contract. */
type HeaderRulesTransform = ForwardProxyRequestTransform & {
  [NAMES_HOST]: (host: string) => boolean
  [CHECKED_AT_START]: true
  [EDIT_HEAD]?: HeadEdit
}

/** Edits a flat request head (name/value pairs) as a header-rules transform would, returning the new head. */
export type HeadEdit = (request: FastifyRequest, destination: ForwardProxyDestination, headers: string[]) => string[]

interface CompiledRule {
  readonly hosts: HostPattern[]
  readonly set: ReadonlyArray<readonly [string, string]>
  readonly remove: readonly string[]
  /** `remove`, as a set of lower-case names. */
  readonly removed: ReadonlySet<string>
  /** `remove` and the names `set` replaces: what leaves the request head before `set` is added. */
  readonly replaced: ReadonlySet<string>
  readonly setResponse: ReadonlyArray<readonly [string, string]>
  readonly removeResponse: readonly string[]
  readonly tlsOnly: boolean
}

/**
 * The built-in header transform (the configuration file's `headers` rules): for every rule
 * whose hosts match the destination, in rule order, request headers are removed then set
 * before the request leaves, and response headers removed then set before the head reaches
 * the client. Header names are matched case-insensitively. Given to forwardProxy (as the bundled
 * server does) it applies to intercepted requests and to `http://` forwarding alike (where a
 * `tlsOnly` rule that sets headers answers 403), except that `set` headers are never added to a
 * TRACE, whose response echoes the request.
 * @throws ForwardProxyRuleError naming the first unusable rule entry.
 */
export function createHeaderRulesTransform (rules: readonly ForwardProxyHeaderRule[]): ForwardProxyRequestTransform {
  if (!Array.isArray(rules)) throw new ForwardProxyRuleError('header rules must be an array')
  const compiled = rules.map((rule, index) => compileRule(rule, `headers[${index}]`))
  const matching = rulesByHost(compiled)
  const transform: HeaderRulesTransform = {
    [NAMES_HOST]: (host: string) => matching(host).length > 0,
    [CHECKED_AT_START]: true,
    appliesTo: (_request, destination) => matching(destination.host).length > 0
  }
  // Each side is there only when a rule edits it: rules that only inject request headers (most
  // of them) leave the response head untouched, with no copy and no turn of the loop.
  if (compiled.some((rule) => rule.set.length > 0 || rule.remove.length > 0)) {
    transform.transformRequest = editRequest
    transform[EDIT_HEAD] = editRequestHead
  }
  if (compiled.some((rule) => rule.setResponse.length > 0 || rule.removeResponse.length > 0)) transform.transformResponse = editResponse
  return transform

  // The transform as the contract has it: on a header object.
  function editRequest (request: FastifyRequest, destination: ForwardProxyDestination, outgoing: ForwardProxyOutgoingRequest): void {
    const echoed = outgoing.method === 'TRACE'
    const rules = requestRules(request, destination, echoed)
    for (const rule of rules) {
      for (const name of rule.remove) Reflect.deleteProperty(outgoing.headers, name)
      if (!echoed) for (const [name, value] of rule.set) outgoing.headers[name] = value
    }
  }

  // The same edits on the flat head the proxy built, as the forwarding path uses them.
  function editRequestHead (request: FastifyRequest, destination: ForwardProxyDestination, headers: string[]): string[] {
    const echoed = request.method === 'TRACE'
    let edited = headers
    for (const rule of requestRules(request, destination, echoed)) edited = editHeadByRule(edited, rule, echoed)
    return edited
  }

  // The rules for this request's head. A TRACE is answered with the request it received: a
  // header set here (an injected credential) would come back to the client in the body.
  function requestRules (request: FastifyRequest, destination: ForwardProxyDestination, echoed: boolean): readonly CompiledRule[] {
    const rules = matching(destination.host)
    if (!echoed && request.interception === null && rules.some((rule) => rule.tlsOnly && rule.set.length > 0)) {
      throw refusedBy('headers[].tlsOnly', new ProxyError('http_request_denied', 'The proxy sends the credentials for this destination over TLS only: use https://.', { status: 403, details: 'credentials are not sent over plain http' }))
    }
    return rules
  }

  function editResponse (_request: FastifyRequest, destination: ForwardProxyDestination, response: ForwardProxyIncomingResponse): void {
    for (const rule of matching(destination.host)) {
      for (const name of rule.removeResponse) Reflect.deleteProperty(response.headers, name)
      for (const [name, value] of rule.setResponse) response.headers[name] = value
    }
  }
}

/**
 * `headers` (flat name/value pairs, names in any case) with one rule's request edits: the names
 * it removes left out and, unless the request is `echoed` (a TRACE), the names it sets replaced
 * by its values, added at the end. A new list; `headers` is never changed.
 */
function editHeadByRule (headers: string[], rule: CompiledRule, echoed: boolean): string[] {
  const leaving = echoed ? rule.removed : rule.replaced
  if (leaving.size === 0) return headers
  const edited: string[] = []
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = headers[i] as string
    if (!leaving.has(name.toLowerCase())) edited.push(name, headers[i + 1] as string)
  }
  if (!echoed) for (const [name, value] of rule.set) edited.push(name, value)
  return edited
}

/**
 * True when every one of `transforms` that edits requests is a header-rules transform, whose
 * edits {@link headEditOf} gives for the flat head; false when another transform edits requests
 * (those get a header object, a copy and the checks).
 */
export function editsHeadOnly (transforms: readonly ForwardProxyRequestTransform[]): boolean {
  for (const transform of transforms) {
    if (transform.transformRequest !== undefined && headEditOf(transform) === undefined) return false
  }
  return true
}

/** The edit of the flat head of a header-rules transform that edits requests; undefined for any other transform. */
export function headEditOf (transform: ForwardProxyRequestTransform): HeadEdit | undefined {
  return (transform as Partial<HeaderRulesTransform>)[EDIT_HEAD]
}

/** True when `transform`'s edits were checked when it was built (a header-rules transform). */
export function editsCheckedAtStart (transform: ForwardProxyRequestTransform): boolean {
  return (transform as { [CHECKED_AT_START]?: true })[CHECKED_AT_START] === true
}

/** True when `transform` is a header-rules transform with a rule for `host`. */
export function headerRulesName (transform: ForwardProxyRequestTransform, host: string): boolean {
  const namesHost = (transform as { [NAMES_HOST]?: (host: string) => boolean })[NAMES_HOST]
  return namesHost?.(host) === true
}

// Hosts whose matching rules are kept; past it the cache starts again (a client can name any host).
const MAX_CACHED_HOSTS = 1024

/** The rules that match a host, in rule order, each host's list computed once. */
function rulesByHost (rules: readonly CompiledRule[]): (host: string) => readonly CompiledRule[] {
  const cache = new Map<string, readonly CompiledRule[]>()
  return (host) => {
    let matching = cache.get(host)
    if (matching === undefined) {
      matching = rules.filter((rule) => matchesAny(rule.hosts, host))
      if (cache.size >= MAX_CACHED_HOSTS) cache.clear()
      cache.set(host, matching)
    }
    return matching
  }
}

function compileRule (rule: ForwardProxyHeaderRule, path: string): CompiledRule {
  if (typeof rule !== 'object' || rule === null) throw new ForwardProxyRuleError(`${path} must be an object`)
  const set = compileSet(rule.set, `${path}.set`, REQUEST_NAMES_REFUSED)
  const remove = compileNames(rule.remove, `${path}.remove`, REQUEST_NAMES_REFUSED)
  return {
    hosts: compileHostPatterns(rule.hosts, `${path}.hosts`),
    set,
    remove,
    removed: new Set(remove),
    replaced: new Set([...remove, ...set.map(([name]) => name)]),
    setResponse: compileSet(rule.setResponse, `${path}.setResponse`, RESPONSE_NAMES_REFUSED),
    removeResponse: compileNames(rule.removeResponse, `${path}.removeResponse`, RESPONSE_NAMES_REFUSED),
    tlsOnly: compileTlsOnly(rule.tlsOnly, `${path}.tlsOnly`)
  }
}

function compileTlsOnly (value: unknown, path: string): boolean {
  if (value !== undefined && typeof value !== 'boolean') throw new ForwardProxyRuleError(`${path} must be a boolean`)
  return value === true
}

function compileNames (names: readonly string[] | undefined, path: string, refused: ReadonlySet<string>): string[] {
  if (names === undefined) return []
  if (!Array.isArray(names)) throw new ForwardProxyRuleError(`${path} must be an array of header names`)
  return names.map((name, index) => headerName(name, `${path}[${index}]`, refused))
}

function compileSet (values: Readonly<Record<string, string>> | undefined, path: string, refused: ReadonlySet<string>): Array<[string, string]> {
  if (values === undefined) return []
  if (typeof values !== 'object' || values === null || Array.isArray(values)) throw new ForwardProxyRuleError(`${path} must map header names to values`)
  const given = new Map<string, string>()
  return Object.entries(values).map(([name, value]) => {
    const lower = headerName(name, `${path}.${name}`, refused)
    // Both would be sent: two values of one field, of which a destination may read either.
    const earlier = given.get(lower)
    if (earlier !== undefined) throw new ForwardProxyRuleError(`${path}.${name} names the same header as ${path}.${earlier} (header names are case-insensitive): keep one`)
    given.set(lower, name)
    // The value may be a secret (an injected credential): never quote it in the message.
    if (typeof value !== 'string' || UNSAFE_VALUE.test(value)) throw new ForwardProxyRuleError(`${path}.${lower} must be a string of characters allowed in a header value (tab, visible ASCII, space, U+0080 to U+00FF): no line breaks, controls, DEL or characters past U+00FF`)
    return [lower, value]
  })
}

function headerName (name: unknown, path: string, refused: ReadonlySet<string>): string {
  if (typeof name !== 'string' || !TOKEN.test(name)) throw new ForwardProxyRuleError(`${path} is not a valid header name`)
  const lower = name.toLowerCase()
  if (refused.has(lower)) throw new ForwardProxyRuleError(`${path}: the proxy manages "${lower}" itself; a rule cannot change it`)
  return lower
}
