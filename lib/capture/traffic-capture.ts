// One registration's capture: which requests are recorded, and where their entries go (the HAR
// file, the applications' iterators), all of it after the response, off the request path.

import type { ForwardProxyCaptureEntry, ForwardProxyCaptureStream } from '../../types/capture'
import type { SecretScrubber } from '../security/secret-scrubber'
import { changesCaptureFile, type CaptureSettings } from './capture-settings'
import { CaptureRecord, type FinishedExchange } from './capture-record'
import { CaptureFeeds } from './capture-feeds'
import { buildHarEntry } from './har-entry'
import { HarFileWriter } from './har-file'

/**
 * Body bytes of finished requests waiting to become entries; past it they are dropped (counted),
 * never held in memory without bound (each holds up to twice maxBodyBytes).
 */
const MAX_PENDING_BYTES = 16 * 1024 * 1024

/** What a capture tells the rest of the proxy. */
export interface CaptureEvents {
  /** The HAR file stopped taking entries (a full disk, an unwritable path): logged once. */
  readonly onFileStopped: (file: string, error: Error) => void
  /** An entry was lost: `where` is `file` (its queue was full), `feed` (a consumer was behind) or `pending` (entries were built slower than requests ended). */
  readonly onDropped: (where: 'file' | 'feed' | 'pending', count: number) => void
  /** An entry was recorded. */
  readonly onRecorded: () => void
}

/** Who the HAR file names as its creator. */
export interface CaptureCreator {
  readonly name: string
  readonly version: string
}

/**
 * Records the requests the `capture` option selects. With no `capture` a request costs one
 * property read (`settings === null`); with one, each selected request gets a
 * {@link CaptureRecord} when it arrives and, once it has ended, is queued to become an entry on
 * a later turn of the event loop: nothing a request waits for is ever written or built.
 */
export class TrafficCapture {
  #settings: CaptureSettings | null = null
  #writer: HarFileWriter | null = null
  /** The file being changed: the old one closing, then the new one starting. */
  #switching: Promise<void> = Promise.resolve()
  readonly #feeds = new CaptureFeeds()
  readonly #pending: FinishedExchange[] = []
  #pendingBytes = 0
  #draining: Promise<void> | null = null
  readonly #creator: CaptureCreator
  readonly #events: CaptureEvents
  readonly #scrubber: () => SecretScrubber | null

  /** `scrubber` gives the scrubber of every secret value known now (null without secrets). */
  constructor (creator: CaptureCreator, events: CaptureEvents, scrubber: () => SecretScrubber | null) {
    this.#creator = creator
    this.#events = events
    this.#scrubber = scrubber
  }

  /** The settings in force; null: nothing is recorded. */
  get settings (): CaptureSettings | null {
    return this.#settings
  }

  /**
   * Applies `settings` (at registration and on every reconfiguration): filters and limits apply
   * to requests that arrive from now on; a changed file (or its rotation) closes the old one,
   * valid, and starts the new one, as does a file that had stopped. Null turns capture off.
   */
  apply (settings: CaptureSettings | null): void {
    const previous = this.#settings
    this.#settings = settings
    // A file that stopped (a full disk) starts again, rotated, when capture is applied anew.
    if (!changesCaptureFile(previous, settings) && this.#writer?.stopped !== true) return
    const old = this.#writer
    this.#writer = null
    const file = settings?.file ?? null
    // The old file is closed before the new one starts: both may be the same path, rotated.
    this.#switching = this.#switching.then(async () => {
      await old?.close()
      // Settings applied meanwhile that name another file (or none) have a switch of their own.
      const current = this.#settings
      if (file === null || current === null || changesCaptureFile(settings, current)) return
      this.#writer = new HarFileWriter(
        { path: file, maxFileBytes: current.maxFileBytes, keepFiles: current.keepFiles, creator: this.#creator },
        (error) => this.#events.onFileStopped(file, error)
      )
    })
  }

  /** A record for a request to `host` when capture is on, its hosts take it and some file or iterator will take the entry; else undefined. */
  begin (host: string): CaptureRecord | undefined {
    const settings = this.#settings
    if (settings === null || (settings.hosts !== null && !settings.hosts.some((pattern) => pattern.matches(host)))) return undefined
    // Nobody to give the entry to: no file (or one that stopped, a full disk) and no iterator open.
    // A file being switched is coming: the entry waits for it (see #drain).
    const noFile = settings.file === null || this.#writer?.stopped === true
    if (noFile && !this.#feeds.active) return undefined
    return new CaptureRecord(settings.maxBodyBytes, (exchange) => this.finish(exchange))
  }

  /**
   * Queues a request that has ended to become an entry, unless the capture's users leave it out
   * (the user is known only once authentication ran) or capture was turned off meanwhile.
   */
  finish (exchange: FinishedExchange): void {
    const settings = this.#settings
    if (settings === null || (settings.users !== null && (exchange.user === null || !settings.users.has(exchange.user)))) return
    const bytes = keptBytes(exchange)
    if (this.#pendingBytes + bytes > MAX_PENDING_BYTES) {
      this.#events.onDropped('pending', 1)
      return
    }
    this.#pendingBytes += bytes
    this.#pending.push(exchange)
    this.#draining ??= new Promise((resolve) => setImmediate(resolve)).then(async () => await this.#drain(settings))
  }

  /** A new iterator of the entries recorded from now on (see ForwardProxyControl.captures). */
  open (bufferSize?: number): ForwardProxyCaptureStream {
    return this.#feeds.open(bufferSize)
  }

  /** Records what is pending, closes the file (valid) and ends the iterators. */
  async close (): Promise<void> {
    await this.#switching
    await this.#draining
    this.#settings = null
    const writer = this.#writer
    this.#writer = null
    await writer?.close()
    this.#feeds.close()
  }

  async #drain (settings: CaptureSettings): Promise<void> {
    // A file being switched takes the entries of requests that ended meanwhile.
    await this.#switching
    for (let exchange = this.#pending.shift(); exchange !== undefined; exchange = this.#pending.shift()) {
      this.#pendingBytes -= keptBytes(exchange)
      let entry: ForwardProxyCaptureEntry
      try {
        entry = await buildHarEntry(exchange, this.#settings ?? settings, this.#scrubber())
      } catch {
        // A body that cannot be read back is not worth a crash; the entry is lost, and counted.
        this.#events.onDropped('pending', 1)
        continue
      }
      this.#events.onRecorded()
      const writer = this.#writer
      if (writer !== null && !writer.stopped && !writer.append(JSON.stringify(entry))) this.#events.onDropped('file', 1)
      const dropped = this.#feeds.offer(entry)
      if (dropped > 0) this.#events.onDropped('feed', dropped)
    }
    this.#draining = null
  }
}

/** The body bytes a finished request holds until its entry is built (at least 1, so heads count too). */
function keptBytes (exchange: FinishedExchange): number {
  return 1 + (exchange.record.requestBody?.kept ?? 0) + (exchange.record.responseBody?.kept ?? 0)
}
