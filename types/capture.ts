/**
 * The `capture` option: what the proxy forwarded, recorded as HAR 1.2 entries, to a file and to
 * `fastify.forwardProxy.captures()`. Secrets never reach a capture: `Proxy-Authorization` is never
 * written, secret values are written as their placeholders, and `redactHeaders` are blanked.
 */
export interface ForwardProxyCaptureOptions {
  /**
   * The HAR file entries are written to, created private (0600). An existing file is kept: it is
   * rotated away first. Omitted: entries only go to `captures()` iterators.
   */
  file?: string
  /** Host patterns (`example.com`, `*.example.com`) whose requests are recorded. Default: every host. */
  hosts?: readonly string[]
  /** Names of the users whose requests are recorded. Default: every request, with a user or without. */
  users?: readonly string[]
  /** Body bytes kept of each request and response (decoded when compressed); 0 keeps heads only. Default 65536. */
  maxBodyBytes?: number
  /** Size in bytes past which the file is rotated (`name.1.har`, `name.2.har`, ...). Default 104857600 (100 MiB). */
  maxFileBytes?: number
  /** Rotated files kept beside the current one; older ones are deleted. Default 5. */
  keepFiles?: number
  /**
   * Header names whose values are written as `[redacted]`, case-insensitive. Default
   * `['authorization', 'cookie', 'set-cookie']`. `Proxy-Authorization` is never written, whatever
   * this says.
   */
  redactHeaders?: readonly string[]
}

/** One name/value pair of a HAR entry (headers, query string, cookies). */
export interface ForwardProxyHarNameValue {
  readonly name: string
  readonly value: string
}

/** A recorded body: text as text, binary as base64, cut at `maxBodyBytes`. */
export interface ForwardProxyHarContent {
  /** Bytes of the body as the client received it, decoded (may exceed what `text` holds). */
  readonly size: number
  /** Bytes saved by compression on the wire, when the body came compressed. */
  readonly compression?: number
  readonly mimeType: string
  /** The body (decoded), up to `maxBodyBytes`; absent when none was kept. */
  readonly text?: string
  /** `base64` when `text` is base64. */
  readonly encoding?: 'base64'
  /** Why the body is not all there: `truncated at N bytes`, `not kept (maxBodyBytes 0)`. */
  readonly comment?: string
}

/** The request of a HAR entry: as sent to the destination, secrets as placeholders. */
export interface ForwardProxyHarRequest {
  readonly method: string
  readonly url: string
  readonly httpVersion: string
  readonly cookies: readonly ForwardProxyHarNameValue[]
  readonly headers: readonly ForwardProxyHarNameValue[]
  readonly queryString: readonly ForwardProxyHarNameValue[]
  readonly postData?: {
    readonly mimeType: string
    readonly text: string
    /** `base64` when `text` is base64 (a field HAR 1.2 leaves to extensions). */
    readonly _encoding?: 'base64'
    readonly comment?: string
  }
  /** -1: not measured. */
  readonly headersSize: number
  readonly bodySize: number
}

/** The response of a HAR entry: as the client received it. */
export interface ForwardProxyHarResponse {
  readonly status: number
  readonly statusText: string
  readonly httpVersion: string
  readonly cookies: readonly ForwardProxyHarNameValue[]
  readonly headers: readonly ForwardProxyHarNameValue[]
  readonly content: ForwardProxyHarContent
  readonly redirectURL: string
  readonly headersSize: number
  readonly bodySize: number
}

/** HAR timings in milliseconds; -1 where the phase did not happen (a reused connection has no `connect`). */
export interface ForwardProxyHarTimings {
  readonly blocked: number
  readonly dns: number
  readonly connect: number
  readonly ssl: number
  readonly send: number
  readonly wait: number
  readonly receive: number
}

/**
 * One recorded exchange, a HAR 1.2 entry with the proxy's own fields: who made it (`_user`, null
 * without authentication), whether it came through an intercepted tunnel (`_intercepted`), what
 * the proxy decided (`_decision`), and for a tunnel relayed opaquely (`_tunnel`), its byte counts.
 */
export interface ForwardProxyCaptureEntry {
  readonly startedDateTime: string
  /** Total milliseconds, the sum of the timings that happened. */
  readonly time: number
  readonly request: ForwardProxyHarRequest
  readonly response: ForwardProxyHarResponse
  readonly cache: Record<string, never>
  readonly timings: ForwardProxyHarTimings
  /** The address the destination connection was dialed to (no port), when one was. */
  readonly serverIPAddress?: string
  readonly _user: string | null
  readonly _intercepted: boolean
  /** `allow`, `deny` (the proxy refused it), `would-deny` (a host list in report mode would have). */
  readonly _decision: 'allow' | 'deny' | 'would-deny'
  /** The `Proxy-Status` error type the proxy answered with, when it answered with one. */
  readonly _errorType?: string
  /** `opaque` (or `passthrough`, relayed opaquely after clients refused the certificate) for a CONNECT tunnel's entry. */
  readonly _tunnel?: 'opaque' | 'passthrough'
  /**
   * A tunnel's or WebSocket's bytes from the client and to it, and why it closed; `_closeReason`
   * is also `client-gone` on a request whose client left before its response was complete, and
   * `shutdown` on one inside an intercepted tunnel the server's shutdown closed.
   */
  readonly _bytesUp?: number
  readonly _bytesDown?: number
  readonly _closeReason?: string
}

/**
 * What `fastify.forwardProxy.captures()` returns: the entries recorded from now on, as they
 * complete. A consumer that falls more than `bufferSize` entries behind loses the newest ones
 * (counted in `dropped`) instead of slowing requests. Stop with `return()` (a `break` out of
 * `for await`).
 */
export interface ForwardProxyCaptureStream extends AsyncIterableIterator<ForwardProxyCaptureEntry> {
  /** Entries this iterator lost because its consumer was behind. */
  readonly dropped: number
}

/** Options of `fastify.forwardProxy.captures(options)`. */
export interface ForwardProxyCaptureStreamOptions {
  /** Entries held for a consumer that is behind; past it new ones are dropped. Default 1000. */
  bufferSize?: number
}
