// What the recorder collects about one request while it runs: the request as sent, the first bytes
// of each body, and the moments that make up its HAR timings.

import type { Readable } from 'node:stream'
import type { ForwardProxyCaptureEntry } from '../../types/capture'
import type { ForwardProxyDestination } from '../../types/destination'
import type { DialDurations } from '../security/dialed-address'
import { formatHostHeader } from '../protocol/hosts'

/** Flat name/value pairs, or a record of lower-case names (what the transforms return). */
export type CapturedHeaders = readonly string[] | Readonly<Record<string, string | readonly string[]>>

/** Header values as Node or Fastify hold them. */
export type HeaderValues = Readonly<Record<string, string | number | readonly string[] | undefined>>

/** The first `limit` bytes of a body as it passes, and how many passed in all. */
export class BodyTap {
  readonly #limit: number
  readonly #chunks: Buffer[] = []
  #kept = 0
  /** Bytes kept. */
  get kept (): number {
    return this.#kept
  }

  /** Bytes that passed, kept or not. */
  total = 0
  /** True once the body ended (not cut short). */
  complete = false

  constructor (limit: number) {
    this.#limit = limit
  }

  /** Notes one chunk; keeps what fits under the limit (a copy: the chunk may be a reused buffer). */
  push (chunk: Buffer): void {
    this.total += chunk.length
    const room = this.#limit - this.#kept
    if (room <= 0) return
    const kept = Buffer.from(chunk.subarray(0, room))
    this.#chunks.push(kept)
    this.#kept += kept.length
  }

  /** Notes a body that came whole: kept without a copy, since nothing writes into it once it is the reply's. */
  takeWhole (body: Buffer): void {
    this.total += body.length
    const kept = body.subarray(0, this.#limit)
    if (kept.length > 0) this.#chunks.push(kept)
    this.#kept += kept.length
    this.complete = true
  }

  /**
   * Notes `body`'s bytes as they pass on their way. The stream is paused first, so the listener
   * does not start it flowing: whatever reads it (the reply's pipe) does, and loses nothing.
   */
  follow (body: Readable): void {
    body.pause()
    body.on('data', (chunk: Buffer) => this.push(chunk))
    body.once('end', () => { this.complete = true })
  }

  /** The bytes kept. */
  bytes (): Buffer {
    return this.#chunks.length === 1 ? this.#chunks[0] as Buffer : Buffer.concat(this.#chunks)
  }
}

/**
 * One request being recorded: created when the request arrives (its host matched the capture's
 * hosts), filled by the forwarding code as the request goes, and turned into a HAR entry when it
 * ends. Times are `performance.now()` milliseconds.
 */
export class CaptureRecord {
  /** Wall-clock start, for `startedDateTime`. */
  readonly startedAt = Date.now()
  readonly start = performance.now()
  readonly maxBodyBytes: number
  /** Hands the request, once it has ended, to the capture that began it. */
  readonly finish: (exchange: FinishedExchange) => void
  /** The request as it left for the destination: placeholders where secrets go. */
  sent: { readonly url: string, readonly headers: CapturedHeaders } | undefined = undefined
  requestBody: BodyTap | undefined = undefined
  responseBody: BodyTap | undefined = undefined
  /** When the request was handed to the connection pool (or the upgrade dialed). */
  dispatchedAt: number | undefined = undefined
  /** When the request's body had all been read from the client. */
  requestSentAt: number | undefined = undefined
  /** When the destination's response head arrived. */
  headAt: number | undefined = undefined
  /** The destination's response head, when the client got it other than through the reply (a WebSocket's 101). */
  switchedHead: { readonly statusCode: number, readonly headers: Readonly<Record<string, string | readonly string[]>> } | undefined = undefined

  constructor (maxBodyBytes: number, finish: (exchange: FinishedExchange) => void) {
    this.maxBodyBytes = maxBodyBytes
    this.finish = finish
  }

  /**
   * Notes the request as it leaves for `destination` over `scheme`: its path and headers with
   * placeholders where secrets go (they are put in later).
   */
  noteSent (scheme: 'http' | 'https', destination: ForwardProxyDestination, path: string, headers: CapturedHeaders): void {
    this.sent = { url: `${scheme}://${formatHostHeader(destination.host, destination.port, scheme === 'https' ? 443 : 80)}${path}`, headers }
  }

  /** A tap for the request body (with `maxBodyBytes` 0 it only counts). */
  tapRequestBody (): BodyTap {
    this.requestBody = new BodyTap(this.maxBodyBytes)
    return this.requestBody
  }

  /** A tap for the response body. */
  tapResponseBody (): BodyTap {
    this.responseBody = new BodyTap(this.maxBodyBytes)
    return this.responseBody
  }
}

/** What the proxy knew when a recorded request ended: everything an entry is built from. */
export interface FinishedExchange {
  readonly record: CaptureRecord
  readonly method: string
  /** The request's URL as received: written when the request never left (the proxy answered it). */
  readonly receivedUrl: string
  /** The request's head as received, flat name/value pairs (for a request that never left). */
  readonly receivedHeaders: readonly string[]
  /** `HTTP/1.1` or `HTTP/2.0`: the client's protocol, for the response it got. */
  readonly clientHttpVersion: string
  readonly status: number
  /** The response head as written to the client. */
  readonly responseHeaders: HeaderValues
  /** Response body bytes sent to the client, when no tap counted them. */
  readonly responseBytes: number
  /** `performance.now()` when the response was finished. */
  readonly endedAt: number
  readonly user: string | null
  readonly intercepted: boolean
  readonly decision: ForwardProxyCaptureEntry['_decision']
  readonly errorType: string | undefined
  /** The IP address the destination connection was dialed to. */
  readonly serverAddress: string | undefined
  /** How long the connection the request went on took to open (counted when the request waited for it). */
  readonly dial: DialDurations | undefined
  /**
   * `client-gone` for a request whose client left before its response was complete; `shutdown`
   * for one the server's shutdown cut (inside an intercepted tunnel it closed).
   */
  readonly closeReason?: 'client-gone' | 'shutdown'
  /** For a relayed tunnel or WebSocket: its bytes each way and why it closed. */
  readonly relay?: { readonly kind: 'opaque' | 'passthrough' | 'websocket', readonly bytesUp: number, readonly bytesDown: number, readonly closeReason: string }
}
