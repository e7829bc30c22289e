// One request to a destination over undici's dispatch interface, and its response as the
// forwarder wants it: the whole body at once when it came with the head (a small response, the
// usual case), a stream of it otherwise.

import { Readable } from 'node:stream'
import { errors, type Dispatcher } from 'undici'
import type { Cancellation } from '../security/destination-connector'
import type { IncomingHeaders } from './client-response-head'
import { proxyErrorFromNetworkError } from '../protocol/network-errors'
import type { EarlyHintsListener } from './early-hints'

/** A destination's response head, and its body whole or as a stream. */
export interface DestinationResponse {
  readonly statusCode: number
  /** Lower-case names, repeats as arrays (undici's parsed form). */
  readonly headers: IncomingHeaders
  /**
   * The whole body, when all of it had arrived by the time the head was read (read from the
   * same socket reads); otherwise a stream that delivers it as it comes, with backpressure to the
   * destination. Destroying the stream before its end aborts the request (undici closes that
   * connection).
   */
  readonly body: Buffer | Readable
}

/** What {@link exchangeWithDestination} may deliver whole, and what cancels it. */
export interface ExchangeOptions {
  /** False when the body must come as a stream whatever its size (it is scrubbed as it flows). */
  readonly wholeBody: boolean
  /**
   * Aborts the request while it is under way (the client left): the answer is undici's
   * `RequestAbortedError`, as a request's `signal` would make it.
   */
  readonly cancellation: Cancellation
  /** Hears the destination's 103 (Early Hints) heads. */
  readonly earlyHints?: EarlyHintsListener | undefined
}

/** Hears how an exchange went: an error before the response head, or the response. */
export type DestinationAnswer = (error: Error | null, response: DestinationResponse | undefined) => void

/**
 * Sends one request through `dispatcher` and calls `onAnswer` once, when the response head is in.
 * undici's `request()` gives every response a body stream, whose set-up, piping and end cost a
 * few microseconds per request on the forwarding path; a body that came in the same reads as
 * the head is handed over as a Buffer instead, and only the others get a stream. A 103 goes to
 * `options.earlyHints`; other informational (1xx) heads are skipped. `onAnswer` gets undici's
 * error when the request fails before its head (connection, timeout, an invalid request), and
 * `RequestAbortedError` when `cancellation` aborts first. No promise: `onAnswer` runs from
 * undici's callbacks (or at once, for a request undici refuses or a cancellation already
 * aborted), so it must not throw.
 */
export function exchangeWithDestination (
  dispatcher: Dispatcher,
  request: Dispatcher.DispatchOptions & { readonly opaque?: unknown },
  options: ExchangeOptions,
  onAnswer: DestinationAnswer
): void {
  const exchange = new DestinationExchange(request.body, options, onAnswer)
  // The request's own options object (each caller builds one per request): the pooled
  // connection it is given to finds the exchange there.
  ;(request as RequestWithExchange)[EXCHANGE] = exchange
  try {
    dispatcher.dispatch(request, exchange)
  } catch (error) {
    exchange.onResponseError(undefined, error as Error)
  }
}

/** What a pooled connection tells the exchange of the request it carries. */
export interface ExchangeOfRequest {
  /** The destination closed its side of the connection (its socket's 'end'). */
  destinationEnded: () => void
}

const EXCHANGE = Symbol('exchange')
type RequestWithExchange = Dispatcher.DispatchOptions & { [EXCHANGE]?: ExchangeOfRequest }

/** The exchange sent with these dispatch options, when {@link exchangeWithDestination} sent them. */
export function exchangeOf (options: Dispatcher.DispatchOptions): ExchangeOfRequest | undefined {
  return (options as RequestWithExchange)[EXCHANGE]
}

// undici's default highWaterMark for response bodies.
const BODY_HIGH_WATER_MARK = 64 * 1024

/** The handler of one exchange: collects the response until it is delivered, then streams the rest. */
class DestinationExchange implements Dispatcher.DispatchHandler, ExchangeOfRequest {
  #controller: Dispatcher.DispatchController | undefined
  #statusCode = 0
  #headers: IncomingHeaders = {}
  #chunks: Buffer[] | undefined
  #stream: DestinationBody | undefined
  #complete = false
  #settled = false
  /** Set once the destination closed its side: the bytes still to come are all in, held back no more. */
  #destinationEnded = false
  readonly #requestBody: unknown
  readonly #wholeBody: boolean
  readonly #onAnswer: DestinationAnswer
  readonly #earlyHints: EarlyHintsListener | undefined
  #stopWatching: (() => void) | undefined

  constructor (requestBody: unknown, options: ExchangeOptions, onAnswer: DestinationAnswer) {
    this.#requestBody = requestBody
    this.#wholeBody = options.wholeBody
    this.#onAnswer = onAnswer
    this.#earlyHints = options.earlyHints
    this.#stopWatching = options.cancellation.onAbort(() => {
      // Once delivered, the body belongs to the reply, which destroys it when the client leaves.
      if (!this.#settled) this.#controller?.abort(new errors.RequestAbortedError())
    })
    if (options.cancellation.aborted) this.#settleWithError(new errors.RequestAbortedError())
  }

  onRequestStart (controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#settled) controller.abort(new errors.RequestAbortedError())
  }

  onResponseStart (_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHeaders): void {
    if (this.#settled) return
    if (statusCode < 200) {
      if (statusCode === 103) this.#earlyHints?.earlyHints(headers)
      return
    }
    this.#statusCode = statusCode
    this.#headers = headers
    this.#chunks = []
    // The parser hands over, before this runs, every part of the response that arrived in the
    // reads that carried its head.
    queueMicrotask(() => this.#deliver())
  }

  onResponseData (controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#stream !== undefined) {
      if (!this.#stream.push(chunk) && !this.#destinationEnded) controller.pause()
    } else {
      this.#chunks?.push(chunk)
    }
  }

  /**
   * Called by the pooled connection when its destination closed its side (before undici hears
   * of it): a body held back for a slow client is let go, and not held again. undici 7 asserts
   * that its parser is not paused when the socket ends, and the assertion, thrown from the
   * socket's 'end' listener, would end the process (nodejs/undici#5360). What is let go is
   * bounded: it has all arrived.
   */
  destinationEnded (): void {
    this.#destinationEnded = true
    const controller = this.#controller
    if (controller?.paused === true) controller.resume()
  }

  onResponseEnd (): void {
    this.#complete = true
    this.#stopWatching?.()
    this.#stream?.push(null)
  }

  onResponseError (_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.#stopWatching?.()
    // What undici's request() does: the request body it was reading is of no more use.
    const body = this.#requestBody
    if (body instanceof Readable && !body.destroyed) {
      body.on('error', () => {})
      body.destroy(error)
    }
    // The body's consumers (the reply, the access line, the log) get the failure as the client
    // will be told it, without the response bytes undici quotes; an answer before the head is
    // mapped the same way by its caller.
    if (this.#stream !== undefined) this.#stream.destroy(proxyErrorFromNetworkError(error))
    else this.#settleWithError(error)
  }

  #settleWithError (error: Error): void {
    if (this.#settled) return
    this.#settled = true
    this.#chunks = undefined
    this.#onAnswer(error, undefined)
  }

  #deliver (): void {
    if (this.#settled) return
    this.#settled = true
    const chunks = this.#chunks ?? []
    this.#chunks = undefined
    const contentType = this.#headers['content-type']
    // Without a Content-Type the reply would add one to a Buffer (a stream gets none).
    if (this.#complete && this.#wholeBody && contentType !== undefined) {
      const body = chunks.length === 1 ? chunks[0] as Buffer : Buffer.concat(chunks)
      this.#onAnswer(null, { statusCode: this.#statusCode, headers: this.#headers, body })
      return
    }
    const stream = new DestinationBody(this)
    this.#stream = stream
    for (const chunk of chunks) stream.push(chunk)
    if (this.#complete) stream.push(null)
    this.#onAnswer(null, { statusCode: this.#statusCode, headers: this.#headers, body: stream })
  }

  /** The body's consumer wants more: lets the destination's bytes flow again. */
  resume (): void {
    this.#controller?.resume()
  }

  /** The body was destroyed before its end: the request is abandoned. */
  abandon (error: Error | null): void {
    if (!this.#complete) this.#controller?.abort(error ?? new errors.RequestAbortedError())
  }
}

/** A destination's response body as it arrives; reading it resumes the destination. */
class DestinationBody extends Readable {
  readonly #exchange: DestinationExchange

  constructor (exchange: DestinationExchange) {
    super({ highWaterMark: BODY_HIGH_WATER_MARK })
    this.#exchange = exchange
  }

  override _read (): void {
    this.#exchange.resume()
  }

  override _destroy (error: Error | null, callback: (error?: Error | null) => void): void {
    this.#exchange.abandon(error)
    callback(error)
  }
}
