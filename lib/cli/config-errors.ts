// Errors in the configuration file: the error type the bin reports on one line, and the line a
// JSON Schema violation becomes (the key as a JSON Pointer, what is expected there, and the
// known key nearest to a misspelt one).

import type { ErrorObject } from 'ajv'

/** A configuration or command-line problem; the message names the file and the key. */
export class ConfigError extends Error {
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
  // A failed oneOf also reports each branch's failure; the oneOf's own description is the one that helps.
  const error = errors.find((e) => e.keyword === 'oneOf') ?? errors.find((e) => e.keyword === 'propertyNames') ?? errors[0]
  if (error === undefined) return 'invalid configuration'
  const where = error.instancePath === '' ? '(top level)' : error.instancePath
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where}: unknown key "${String(params.additionalProperty)}"${suggestion(String(params.additionalProperty), error.parentSchema as SchemaNode | undefined)}`
    case 'required':
      return `${where}: missing required key "${String(params.missingProperty)}"`
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

/** ` (did you mean "users"?)` when a known key of `schema` is a likely typo of `key`, else ''. */
function suggestion (key: string, schema: SchemaNode | undefined): string {
  let best: string | undefined
  let bestDistance = Infinity
  for (const known of Object.keys(schema?.properties ?? {})) {
    const distance = editDistance(key.toLowerCase(), known.toLowerCase())
    if (distance < bestDistance) {
      best = known
      bestDistance = distance
    }
  }
  // A third of the key's length (at least 1, at most 3) keeps unrelated names from being offered.
  return best !== undefined && bestDistance <= Math.min(3, Math.max(1, Math.floor(key.length / 3))) ? ` (did you mean "${best}"?)` : ''
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
