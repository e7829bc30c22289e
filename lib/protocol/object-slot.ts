// Per-object state kept on the object itself, for objects that live as long as one request.

/**
 * A value kept on an object (a raw request, its socket, a reply) under a private symbol, with a
 * WeakMap's get and set. For objects that live as long as one request it replaces a WeakMap:
 * every WeakMap entry whose key is young is an ephemeron the garbage collector must revisit at
 * each young-generation collection, a cost paid per request; a property is traced like any
 * other. The symbol is not enumerable through `Object.keys` or JSON, and only this module's
 * callers hold it.
 */
export class ObjectSlot<T> {
  private readonly key: symbol

  /** `name` describes the symbol (seen in a debugger, never by clients). */
  constructor (name: string) {
    this.key = Symbol(`fastify-forward-proxy.${name}`)
  }

  /** The value kept on `holder`, or undefined. */
  get (holder: object): T | undefined {
    return (holder as Record<symbol, T | undefined>)[this.key]
  }

  /** Keeps `value` on `holder`. */
  set (holder: object, value: T): void {
    (holder as Record<symbol, T>)[this.key] = value
  }
}
