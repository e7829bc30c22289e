import type { ForwardProxyHeaderRule } from '../../types/header-rules'
import type { ForwardProxyRequestTransform } from '../../types/interception'
import { matchesAny, type HostPattern } from '../security/host-pattern'
import { compileHostPatterns, ForwardProxyRuleError } from '../interception/host-list-selector'

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// Values become header field values as given, so they must be what Node accepts in one: tab,
// visible ASCII, space and obs-text bytes; no line breaks (header injection), NUL, other controls,
// DEL or characters past U+00FF, which would fail every matching request instead of start-up.
const UNSAFE_VALUE = /[^\t\x20-\x7e\x80-\xff]/

// Framing and routing are the proxy's: a rule changing them would break or re-route the message.
const REQUEST_NAMES_REFUSED = new Set([
  'host', 'content-length', 'transfer-encoding', 'connection', 'proxy-connection', 'keep-alive',
  'te', 'trailer', 'upgrade', 'proxy-authorization', 'http2-settings'
])
const RESPONSE_NAMES_REFUSED = new Set([
  'content-length', 'transfer-encoding', 'connection', 'proxy-connection', 'keep-alive', 'trailer',
  'upgrade', 'proxy-authenticate'
])

interface CompiledRule {
  readonly hosts: HostPattern[]
  readonly set: ReadonlyArray<readonly [string, string]>
  readonly remove: readonly string[]
  readonly setResponse: ReadonlyArray<readonly [string, string]>
  readonly removeResponse: readonly string[]
}

/**
 * The built-in header transform (the configuration file's `headers` rules): for every rule
 * whose hosts match the destination, in rule order, request headers are removed then set
 * before the request leaves, and response headers removed then set before the head reaches
 * the client. Header names are matched case-insensitively. It applies to intercepted requests
 * and to `http://` forwarding alike (transforms run for both), except that `set` headers are
 * never added to a TRACE, whose response echoes the request.
 * @throws ForwardProxyRuleError naming the first unusable rule entry.
 */
export function createHeaderRulesTransform (rules: readonly ForwardProxyHeaderRule[]): ForwardProxyRequestTransform {
  if (!Array.isArray(rules)) throw new ForwardProxyRuleError('header rules must be an array')
  const compiled = rules.map((rule, index) => compileRule(rule, `headers[${index}]`))
  const matching = (host: string): CompiledRule[] => compiled.filter((rule) => matchesAny(rule.hosts, host))
  return {
    transformRequest (_request, destination, outgoing) {
      // A TRACE is answered with the request it received: a header set here (an injected
      // credential) would come back to the client in the body.
      const echoed = outgoing.method === 'TRACE'
      for (const rule of matching(destination.host)) {
        for (const name of rule.remove) Reflect.deleteProperty(outgoing.headers, name)
        if (!echoed) for (const [name, value] of rule.set) outgoing.headers[name] = value
      }
    },
    transformResponse (_request, destination, response) {
      for (const rule of matching(destination.host)) {
        for (const name of rule.removeResponse) Reflect.deleteProperty(response.headers, name)
        for (const [name, value] of rule.setResponse) response.headers[name] = value
      }
    }
  }
}

function compileRule (rule: ForwardProxyHeaderRule, path: string): CompiledRule {
  if (typeof rule !== 'object' || rule === null) throw new ForwardProxyRuleError(`${path} must be an object`)
  return {
    hosts: compileHostPatterns(rule.hosts, `${path}.hosts`),
    set: compileSet(rule.set, `${path}.set`, REQUEST_NAMES_REFUSED),
    remove: compileNames(rule.remove, `${path}.remove`, REQUEST_NAMES_REFUSED),
    setResponse: compileSet(rule.setResponse, `${path}.setResponse`, RESPONSE_NAMES_REFUSED),
    removeResponse: compileNames(rule.removeResponse, `${path}.removeResponse`, RESPONSE_NAMES_REFUSED)
  }
}

function compileNames (names: readonly string[] | undefined, path: string, refused: ReadonlySet<string>): string[] {
  if (names === undefined) return []
  if (!Array.isArray(names)) throw new ForwardProxyRuleError(`${path} must be an array of header names`)
  return names.map((name, index) => headerName(name, `${path}[${index}]`, refused))
}

function compileSet (values: Readonly<Record<string, string>> | undefined, path: string, refused: ReadonlySet<string>): Array<[string, string]> {
  if (values === undefined) return []
  if (typeof values !== 'object' || values === null || Array.isArray(values)) throw new ForwardProxyRuleError(`${path} must map header names to values`)
  return Object.entries(values).map(([name, value]) => {
    const lower = headerName(name, `${path}.${name}`, refused)
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
