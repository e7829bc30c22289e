import { EventEmitter } from 'node:events'

/** The part of a response (HTTP/1.1 or HTTP/2 compatibility) a departure watches. */
interface WatchedResponse {
  readonly writableFinished: boolean
  once: (event: 'close', listener: () => void) => unknown
}

/**
 * Says when the client left before its response was finished: sets `aborted` and emits
 * `'abort'` once, which is the shape undici accepts as a request's `signal`. An
 * AbortController (an EventTarget) per forwarded request cost about 5% of the proxy's CPU on
 * the forwarding path, so a real AbortSignal is only made for the transforms, which are
 * promised one, the first time one asks.
 */
export class ClientDeparture extends EventEmitter {
  /** True once the client has left. */
  aborted = false
  #controller: AbortController | undefined

  constructor (response: WatchedResponse) {
    super()
    response.once('close', () => {
      if (response.writableFinished || this.aborted) return
      this.aborted = true
      this.#controller?.abort()
      this.emit('abort')
    })
  }

  /** An AbortSignal that aborts when the client leaves (made on first use). */
  get signal (): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.aborted) this.#controller.abort()
    }
    return this.#controller.signal
  }
}
