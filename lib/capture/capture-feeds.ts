// The live view of a capture for applications: each `captures()` call gets its own iterator, fed
// without ever waiting on its consumer.

import type { ForwardProxyCaptureEntry, ForwardProxyCaptureStream } from '../../types/capture'

const DEFAULT_BUFFER_SIZE = 1000

/**
 * One consumer's iterator: entries wait in a bounded buffer until it reads them; when the buffer
 * is full the newest are dropped and counted, so a slow consumer never holds a request back nor
 * grows without bound.
 */
class CaptureFeed implements ForwardProxyCaptureStream {
  readonly #buffer: ForwardProxyCaptureEntry[] = []
  readonly #size: number
  readonly #onEnd: (feed: CaptureFeed) => void
  #waiting: ((result: IteratorResult<ForwardProxyCaptureEntry>) => void) | undefined
  #ended = false
  #dropped = 0

  constructor (size: number, onEnd: (feed: CaptureFeed) => void) {
    this.#size = size
    this.#onEnd = onEnd
  }

  get dropped (): number {
    return this.#dropped
  }

  /** Hands `entry` to the consumer waiting, else buffers it; false when it was dropped. */
  offer (entry: ForwardProxyCaptureEntry): boolean {
    if (this.#ended) return false
    const waiting = this.#waiting
    if (waiting !== undefined) {
      this.#waiting = undefined
      waiting({ value: entry, done: false })
      return true
    }
    if (this.#buffer.length >= this.#size) {
      this.#dropped++
      return false
    }
    this.#buffer.push(entry)
    return true
  }

  next (): Promise<IteratorResult<ForwardProxyCaptureEntry>> {
    const entry = this.#buffer.shift()
    if (entry !== undefined) return Promise.resolve({ value: entry, done: false })
    if (this.#ended) return Promise.resolve({ value: undefined, done: true })
    // A second next() before the first settled shares the same wait: one consumer per iterator.
    return new Promise((resolve) => {
      const previous = this.#waiting
      this.#waiting = (result) => {
        previous?.(result)
        resolve(result)
      }
    })
  }

  return (): Promise<IteratorResult<ForwardProxyCaptureEntry>> {
    this.end(true)
    return Promise.resolve({ value: undefined, done: true })
  }

  /** No more entries: a consumer waiting is told so; with `discard`, what is buffered goes too. */
  end (discard: boolean): void {
    if (this.#ended) return
    this.#ended = true
    if (discard) this.#buffer.length = 0
    this.#onEnd(this)
    const waiting = this.#waiting
    this.#waiting = undefined
    waiting?.({ value: undefined, done: true })
  }

  [Symbol.asyncIterator] (): this {
    return this
  }
}

/** The iterators open on one registration's capture. */
export class CaptureFeeds {
  readonly #feeds = new Set<CaptureFeed>()
  #closed = false

  /** True when some consumer is reading: entries are built for it even without a file. */
  get active (): boolean {
    return this.#feeds.size > 0
  }

  /**
   * A new iterator of the entries offered from now on, holding up to `bufferSize` for a consumer
   * that is behind. After {@link close} it is already done.
   */
  open (bufferSize: number = DEFAULT_BUFFER_SIZE): ForwardProxyCaptureStream {
    const feed = new CaptureFeed(bufferSize, (ended) => this.#feeds.delete(ended))
    if (this.#closed) feed.end(true)
    else this.#feeds.add(feed)
    return feed
  }

  /** Offers `entry` to every iterator; returns how many dropped it. */
  offer (entry: ForwardProxyCaptureEntry): number {
    let dropped = 0
    for (const feed of this.#feeds) if (!feed.offer(entry)) dropped++
    return dropped
  }

  /** Ends every iterator (the server closes): each still hands out what it buffered, then is done. */
  close (): void {
    this.#closed = true
    for (const feed of [...this.#feeds]) feed.end(false)
  }
}
