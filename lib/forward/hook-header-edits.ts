import type { ForwardProxyDestination } from '../../types/destination'
import { ProxyError } from '../diagnostics/proxy-error'
import { isEquivalentAuthority } from './equivalent-authority'
import type { ReceivedHeaders } from './received-headers'

/** What the application's hooks did to `request.headers`, in lower-case names. */
export interface HookHeaderEdits {
  /** Names the hooks deleted. */
  readonly removed: ReadonlySet<string>
  /** Names the hooks replaced or added, with the field values to send instead (one line each). */
  readonly changed: ReadonlyMap<string, readonly string[]>
}

/** No edits: the request leaves with its headers as received. */
export const NO_HOOK_EDITS: HookHeaderEdits = { removed: new Set(), changed: new Map() }

/** Where the request goes, for the checks on `Host`. */
export interface EditedRequestTarget {
  readonly destination: ForwardProxyDestination
  /** The port an omitted `Host` port stands for (80 for http, 443 for https). */
  readonly defaultPort: number
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const UNSAFE_VALUE = /[\r\n\0]/

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
 * name that is not a token, or a value that is not a string or number or holds CR, LF or NUL.
 */
export function hookHeaderEdits (
  received: ReceivedHeaders,
  current: Readonly<Record<string, unknown>>,
  target: EditedRequestTarget
): HookHeaderEdits {
  const removed = new Set<string>()
  const changed = new Map<string, readonly string[]>()
  for (const name of Object.keys(received)) {
    if (!name.startsWith(':') && current[name] === undefined) removed.add(name)
  }
  for (const [name, value] of Object.entries(current)) {
    if (value === undefined || name.startsWith(':')) continue
    const values = fieldValues(name, value)
    if (sameValue(received[name], values)) continue
    if (!TOKEN.test(name)) throw hookRefused('a hook set an invalid header name')
    changed.set(name.toLowerCase(), values)
  }

  removed.delete('content-length')
  if (changed.has('content-length')) throw hookRefused('a hook changed content-length')
  removed.delete('host')
  const host = changed.get('host')
  if (host !== undefined) {
    const [only] = host
    if (host.length !== 1 || only === undefined || !isEquivalentAuthority(only, target.destination, target.defaultPort)) {
      throw hookRefused('a hook set a Host for another authority')
    }
    changed.delete('host')
  }
  return { removed, changed }
}

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
