// Which transforms run on which forwarded requests: forwardProxy's on all of them,
// tlsInterception's inside intercepted tunnels only. The two lists are built when the
// transforms change, so a request only picks one.

import type { ForwardProxyRequestTransform } from '../../types/interception'

/**
 * The requests a transform runs on: `'forwarded'` for every forwarded request (`http://`
 * forwarding and requests inside intercepted tunnels), `'intercepted'` for requests inside
 * intercepted tunnels only.
 */
export type TransformScope = 'forwarded' | 'intercepted'

/** The transforms of one configuration, in registration order, one list per kind of request. */
export interface TransformLists {
  /** For absolute-form `http://` forwarding: the `'forwarded'` transforms. */
  readonly plainHttp: readonly ForwardProxyRequestTransform[]
  /** For requests inside intercepted tunnels (WebSocket upgrades included): every transform. */
  readonly intercepted: readonly ForwardProxyRequestTransform[]
}

interface ScopedTransform {
  readonly transform: ForwardProxyRequestTransform
  readonly scope: TransformScope
}

/**
 * The transforms of one registration: those of forwardProxy's `transforms` option first (every
 * forwarded request), then those added later (`addTransform`, tlsInterception's), in the order
 * they were added. {@link TransformRegistry.lists} is replaced whole on every change, never
 * edited, so a request that took it keeps the transforms it began with.
 */
export class TransformRegistry {
  readonly #added: ScopedTransform[] = []
  #fromOptions: readonly ForwardProxyRequestTransform[]
  #lists: TransformLists

  constructor (fromOptions: readonly ForwardProxyRequestTransform[]) {
    this.#fromOptions = fromOptions
    this.#lists = this.#build()
  }

  /** The lists in force: read when a request starts. */
  get lists (): TransformLists {
    return this.#lists
  }

  /** Appends a transform for the requests of `scope`, after every transform added before it. */
  add (transform: ForwardProxyRequestTransform, scope: TransformScope): void {
    this.#added.push({ transform, scope })
    this.#lists = this.#build()
  }

  /** Replaces the `transforms` option's (a reconfiguration); those added later are kept, after them. */
  replaceOptionTransforms (fromOptions: readonly ForwardProxyRequestTransform[]): void {
    this.#fromOptions = fromOptions
    this.#lists = this.#build()
  }

  #build (): TransformLists {
    const intercepted = [...this.#fromOptions, ...this.#added.map((added) => added.transform)]
    const plainHttp = [...this.#fromOptions, ...this.#added.filter((added) => added.scope === 'forwarded').map((added) => added.transform)]
    return { plainHttp, intercepted }
  }
}
