// Offline validation of Kubernetes objects against the API's OpenAPI schemas, as compiled by the
// kubernetes-models package, plus the check its schemas leave out: fields the API does not know
// (kubectl's strict field validation refuses them; a misspelt "readinesProbe" would otherwise
// pass as an unknown, ignored key).

/** What is wrong with one object: schema errors, then unknown fields, as JSON Pointers. */
export function kubernetesObjectProblems (object: unknown): string[] {
  if (!isRecord(object) || typeof object.apiVersion !== 'string' || typeof object.kind !== 'string') {
    return ['not a Kubernetes object (apiVersion and kind)']
  }
  const validate = validatorOf(object.apiVersion, object.kind)
  if (validate === undefined) return [`no schema for ${object.apiVersion} ${object.kind}`]
  const read = new Map<object, Set<string>>()
  const problems: string[] = []
  try {
    validate.call(tracked(object, read))
  } catch (error) {
    problems.push((error as Error).message)
  }
  return [...problems, ...unknownFields(object, read, '').map((pointer) => `${pointer}: a field the schema does not know`)]
}

type ValidateMethod = (this: unknown) => void

/** The `validate` method of the kubernetes-models class of `kind` (it validates `this`). */
function validatorOf (apiVersion: string, kind: string): ValidateMethod | undefined {
  if (!/^[A-Za-z0-9.]+(\/[a-z0-9]+)?$/.test(apiVersion) || !/^[A-Za-z]+$/.test(kind)) return undefined
  let loaded: unknown
  try {
    loaded = require(`kubernetes-models/${apiVersion}/${kind}`)
  } catch {
    return undefined
  }
  const model = isRecord(loaded) ? loaded[kind] : undefined
  const validate: unknown = typeof model === 'function' ? (model.prototype as Record<string, unknown>).validate : undefined
  return typeof validate === 'function' ? validate as ValidateMethod : undefined
}

/**
 * `value` behind proxies that note, for each object, the property names read from it: the
 * compiled validators read exactly the properties their schema names, and every key of a map
 * (labels, resource quantities) they iterate over.
 */
function tracked (value: unknown, read: Map<object, Set<string>>): unknown {
  if (typeof value !== 'object' || value === null) return value
  const names = read.get(value) ?? new Set<string>()
  read.set(value, names)
  return new Proxy(value, {
    get (target, property, receiver) {
      if (typeof property === 'string') names.add(property)
      return tracked(Reflect.get(target, property, receiver), read)
    }
  })
}

function unknownFields (value: unknown, read: Map<object, Set<string>>, pointer: string): string[] {
  if (typeof value !== 'object' || value === null) return []
  const names = read.get(value) ?? new Set<string>()
  return Object.entries(value).flatMap(([key, child]) => {
    const here = `${pointer}/${key}`
    if (!Array.isArray(value) && !names.has(key)) return [here]
    return unknownFields(child, read, here)
  })
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
