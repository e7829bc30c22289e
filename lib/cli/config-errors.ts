// Errors in the configuration file: the error type the bin reports on one line, and the line a
// JSON Schema violation becomes (the key as a JSON Pointer, what is expected there, and the
// known key nearest to a misspelt one).

import type { ErrorObject } from 'ajv'

/** A configuration or command-line problem; the message names the file and the key. */
export class ConfigError extends Error {
  /** Stable code of every configuration error. */
  readonly code = 'FFP_ERR_INVALID_CONFIG'

  constructor (message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

interface SchemaNode {
  type?: string
  description?: string
  minimum?: number
  maximum?: number
  minLength?: number
  enum?: readonly unknown[]
  items?: SchemaNode
  properties?: Record<string, unknown>
}

/**
 * Turns the first schema violation ajv reports (compiled with `verbose: true`) into one line
 * naming the key (a JSON Pointer) and what is expected there,
 * e.g. `/listen/0/port must be an integer from 0 to 65535`.
 */
export function describeSchemaError (errors: readonly ErrorObject[]): string {
  // A failed oneOf also reports each branch's failure; the oneOf's own description is the one
  // that helps, unless a branch failed on a misspelt key (a user object's "alowedHosts"): that
  // branch is the one meant, and the key is what to fix.
  const oneOf = errors.find((e) => e.keyword === 'oneOf')
  const typo = oneOf === undefined ? undefined : errors.find((e) => isWithin(e, oneOf) && misspeltKeyOf(e) !== undefined)
  const error = typo ?? oneOf ?? errors.find((e) => e.keyword === 'propertyNames') ?? errors[0]
  if (error === undefined) return 'invalid configuration'
  const where = error.instancePath === '' ? '(top level)' : error.instancePath
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where}: unknown key "${String(params.additionalProperty)}"${suggestion(String(params.additionalProperty), error.parentSchema as SchemaNode | undefined)}`
    case 'required': {
      // A required key misspelt is reported as missing first: name the misspelling instead.
      const misspelt = misspeltKeyOf(error)
      if (misspelt !== undefined) return `${where}: unknown key "${misspelt}" (did you mean "${String(params.missingProperty)}"?)`
      return `${where}: missing required key "${String(params.missingProperty)}"`
    }
    case 'minItems':
      return `${where} must list at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}`
    case 'dependencies':
      return `${where}: "${String(params.property)}" needs "${String(params.missingProperty)}" too`
    case 'propertyNames':
      return where === '/secrets'
        ? `${where}: key "${String(params.propertyName)}" is not allowed (secret names are 1 to 64 letters, digits, ".", "-" or "_")`
        : `${where}: key "${String(params.propertyName)}" is not allowed (user names must be non-empty and contain no ":")`
    default:
      return `${where} must be ${expected(error.parentSchema as SchemaNode | undefined)}`
  }
}

/** True when `error` is about the value `oneOf` failed on, or about something inside it. */
function isWithin (error: ErrorObject, oneOf: ErrorObject): boolean {
  return error !== oneOf && (error.instancePath === oneOf.instancePath || error.instancePath.startsWith(`${oneOf.instancePath}/`))
}

/**
 * The key of the object `error` is about that looks like a typo: the unknown key of an
 * `additionalProperties` error when a known key is close to it, or for a `required` error, an
 * unknown key of the object (ajv's `verbose` data) close to the missing one. Else undefined.
 */
function misspeltKeyOf (error: ErrorObject): string | undefined {
  const params = error.params as Record<string, unknown>
  const schema = error.parentSchema as SchemaNode | undefined
  if (error.keyword === 'additionalProperties') {
    const key = String(params.additionalProperty)
    return closestKnownKey(key, schema) === undefined ? undefined : key
  }
  if (error.keyword !== 'required' || typeof error.data !== 'object' || error.data === null) return undefined
  const missing = String(params.missingProperty)
  return Object.keys(error.data).find((key) => !(key in (schema?.properties ?? {})) && isCloseTo(key, missing))
}

/** ` (did you mean "users"?)` when a known key of `schema` is a likely typo of `key`, else ''. */
function suggestion (key: string, schema: SchemaNode | undefined): string {
  const best = closestKnownKey(key, schema)
  return best === undefined ? '' : ` (did you mean "${best}"?)`
}

/** The known key of `schema` nearest to `key`, when it is near enough to be what was meant. */
function closestKnownKey (key: string, schema: SchemaNode | undefined): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  for (const known of Object.keys(schema?.properties ?? {})) {
    const distance = editDistance(key.toLowerCase(), known.toLowerCase())
    if (distance < bestDistance) {
      best = known
      bestDistance = distance
    }
  }
  return best !== undefined && isNearEnough(key, bestDistance) ? best : undefined
}

function isCloseTo (key: string, known: string): boolean {
  return isNearEnough(key, editDistance(key.toLowerCase(), known.toLowerCase()))
}

// A third of the key's length (at least 1, at most 3) keeps unrelated names from being offered.
function isNearEnough (key: string, distance: number): boolean {
  return distance <= Math.min(3, Math.max(1, Math.floor(key.length / 3)))
}

/** Edit distance with insertions, deletions, substitutions and swaps of two neighbours ("tsl" is 1 from "tls"). */
function editDistance (a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  const at = (i: number, j: number): number => rows[i]?.[j] ?? 0
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] ?? []
    for (let j = 1; j <= b.length; j++) {
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1)
      row[j] = best
    }
  }
  return at(a.length, b.length)
}

function expected (schema: SchemaNode | undefined): string {
  if (schema === undefined) return 'valid'
  if (schema.description !== undefined) return schema.description
  if (schema.enum !== undefined) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`
  switch (schema.type) {
    case 'integer':
      if (schema.minimum !== undefined && schema.maximum !== undefined) return `an integer from ${schema.minimum} to ${schema.maximum}`
      return schema.minimum === undefined ? 'an integer' : `an integer of at least ${schema.minimum}`
    case 'string':
      return schema.minLength === undefined ? 'a string' : 'a non-empty string'
    case 'boolean':
      return 'true or false'
    case 'array':
      return schema.items === undefined ? 'an array' : `an array of ${plural(expected(schema.items))}`
    case 'object':
      return 'an object'
    default:
      return 'valid'
  }
}

function plural (text: string): string {
  return text.replace(/^an? /, '').replace(/\b(string|integer|object)\b/, '$1s')
}
