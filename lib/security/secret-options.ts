// The `secrets` option: each entry checked (name, value or source, placeholder, hosts with their
// ports) and the set compiled. Messages never quote a value.

import type { ForwardProxySecretSource } from '../../types/secrets'
import { ForwardProxyOptionsError } from '../protocol/errors'
import { compileHostPattern } from '../protocol/hosts'
import { PLACEHOLDER, SECRET_NAME, SECRET_VALUE, SecretValue, defaultPlaceholder } from './secret-values'
import { SecretSet, type SecretGrant } from './secrets'

/**
 * Validates the `secrets` option and compiles it; null when there are none.
 * @throws ForwardProxyOptionsError naming the first bad entry (never quoting a value).
 */
export function compileSecrets (secrets: unknown, option = 'secrets'): SecretSet | null {
  if (secrets === undefined) return null
  if (!Array.isArray(secrets)) throw new ForwardProxyOptionsError(option, 'must be an array of { name, value or source, hosts, placeholder? }')
  const entries = secrets.map((secret: unknown, index) => checkSecret(secret, `${option}[${index}]`))
  entries.forEach((secret, index) => {
    for (const other of entries.slice(0, index)) {
      if (other.name === secret.name) throw new ForwardProxyOptionsError(`${option}[${index}].name`, `repeats "${secret.name}"`)
      if (other.placeholder.includes(secret.placeholder) || secret.placeholder.includes(other.placeholder)) {
        throw new ForwardProxyOptionsError(`${option}[${index}].placeholder`, `overlaps the placeholder of "${other.name}": no placeholder may contain another`)
      }
    }
  })
  const placeholders = entries.map((secret) => secret.placeholder)
  for (const secret of entries) {
    if (entries.some((other) => other.value?.includes(secret.placeholder) === true)) {
      throw new ForwardProxyOptionsError(`${option}.placeholder`, `of "${secret.name}" appears in a secret's value: choose another placeholder`)
    }
  }
  if (entries.length === 0) return null
  return new SecretSet(entries.map(({ name, value, source, placeholder, grants }) => ({
    name,
    value: new SecretValue(name, value, source, () => placeholders),
    placeholder,
    lowerPlaceholder: placeholder.toLowerCase(),
    grants
  })))
}

interface CheckedSecret {
  readonly name: string
  readonly value: string | undefined
  readonly source: ForwardProxySecretSource | undefined
  readonly placeholder: string
  readonly grants: SecretGrant[]
}

function checkSecret (secret: unknown, option: string): CheckedSecret {
  if (typeof secret !== 'object' || secret === null) throw new ForwardProxyOptionsError(option, 'must be an object { name, value or source, hosts, placeholder? }')
  const { name, value, source, hosts, placeholder, ...rest } = secret as Record<string, unknown>
  const unknownKey = Object.keys(rest)[0]
  if (unknownKey !== undefined) throw new ForwardProxyOptionsError(`${option}.${unknownKey}`, 'is not a known option (known: name, value, source, hosts, placeholder)')
  if (typeof name !== 'string' || !SECRET_NAME.test(name)) throw new ForwardProxyOptionsError(`${option}.name`, 'must be 1 to 64 letters, digits, ".", "-" or "_"')
  if ((value === undefined) === (source === undefined)) throw new ForwardProxyOptionsError(option, 'needs exactly one of "value" and "source"')
  // Never quote the value: the message may be logged.
  if (value !== undefined && (typeof value !== 'string' || !SECRET_VALUE.test(value))) throw new ForwardProxyOptionsError(`${option}.value`, 'must be 8 to 4096 visible ASCII characters (no spaces, line breaks or controls)')
  if (source !== undefined && (typeof source !== 'object' || source === null || typeof (source as { getValue?: unknown }).getValue !== 'function')) {
    throw new ForwardProxyOptionsError(`${option}.source`, 'must be an object with a getValue(name, signal) function')
  }
  const chosen = placeholder ?? defaultPlaceholder(name)
  if (typeof chosen !== 'string' || !PLACEHOLDER.test(chosen)) throw new ForwardProxyOptionsError(`${option}.placeholder`, 'must be 8 to 128 letters, digits, ".", "-", "_" or "~"')
  if (!Array.isArray(hosts) || hosts.length === 0) throw new ForwardProxyOptionsError(`${option}.hosts`, 'must be a non-empty array of host patterns, each with an optional port')
  const checked = hosts.map((entry: unknown, index) => secretGrant(entry, `${option}.hosts[${index}]`))
  return { name, value: value as string | undefined, source: source as ForwardProxySecretSource | undefined, placeholder: chosen, grants: checked }
}

// `[v6]:port`, `[v6]`, `name:port`; more than one colon without brackets is a bare IPv6 literal
// or range, which names no port.
const BRACKETED = /^\[([^\]]+)\](?::([0-9]{1,5}))?$/
const NAME_AND_PORT = /^([^:]+):([0-9]{1,5})$/

/**
 * Splits one `hosts` entry of a secret into its host pattern text and its port, 443 when it names
 * none: a grant for `api.example.com` never reaches `api.example.com:8443`, whatever listens
 * there. Null when the port is not 1 to 65535; the pattern text is not checked here.
 */
export function splitSecretHost (entry: string): { readonly pattern: string, readonly port: number } | null {
  const split = BRACKETED.exec(entry) ?? NAME_AND_PORT.exec(entry)
  const port = split?.[2] === undefined ? 443 : Number(split[2])
  if (!(port >= 1 && port <= 65535)) return null
  return { pattern: split === null ? entry : split[1] as string, port }
}

function secretGrant (entry: unknown, option: string): SecretGrant {
  const split = typeof entry === 'string' ? splitSecretHost(entry) : null
  const pattern = split === null ? null : compileHostPattern(split.pattern)
  if (split === null || pattern === null) {
    throw new ForwardProxyOptionsError(option, 'is not a host pattern with an optional port (api.example.com, api.example.com:8443, *.example.com, an IP literal, [::1]:8443 or a CIDR range)')
  }
  return { pattern, port: split.port }
}
