// A response from a destination some secret is granted to, on its way to the client: every form
// of a secret value in its head (names and values) and body is replaced by the placeholder, a
// body the destination encoded anyway decoded first so that its bytes can be searched.

import type { Duplex, Readable, Transform } from 'node:stream'
import * as zlib from 'node:zlib'
import { ProxyError } from '../protocol/errors'
import type { FastifyReply } from 'fastify'
import type { SecretScrubber } from '../security/secret-scrubber'
import { replaceReplyHeaders, replyHeaderRecord } from './forwarded-response'
import { headerTokens } from '../protocol/header-tokens'

/** Header fields as the reply holds them. */
type Headers = Record<string, string | string[]>

/**
 * Replaces, in place, every form of a secret value in the names and values of `headers` (a
 * header name that spells a value is renamed, its values kept); adds the secrets' names to
 * `found`.
 */
export function scrubHeaders (headers: Headers, scrubber: SecretScrubber, found: Set<string>): void {
  for (const [name, value] of Object.entries(headers)) {
    const scrubbed = scrubValue(value, scrubber, found)
    const scrubbedName = scrubber.scrubText(name, found)
    if (scrubbedName === name) {
      if (scrubbed !== value) headers[name] = scrubbed
      continue
    }
    Reflect.deleteProperty(headers, name)
    const existing = headers[scrubbedName]
    headers[scrubbedName] = existing === undefined ? scrubbed : [...[existing].flat(), ...[scrubbed].flat()]
  }
}

/** `value` with every form replaced; `value` itself when nothing was found. */
function scrubValue (value: string | string[], scrubber: SecretScrubber, found: Set<string>): string | string[] {
  if (!Array.isArray(value)) return scrubber.scrubText(value, found)
  const scrubbed = value.map((item) => scrubber.scrubText(item, found))
  return scrubbed.every((item, index) => item === value[index]) ? value : scrubbed
}

/**
 * Scrubs the head of a forwarded reply as the proxy route's last onSend hook leaves it (the
 * destination's, after the transforms and the application's hooks): see {@link scrubHeaders}.
 */
export function scrubReplyHeaders (reply: FastifyReply, scrubber: SecretScrubber, found: Set<string>): void {
  const before = replyHeaderRecord(reply)
  const after: Headers = { ...before }
  scrubHeaders(after, scrubber, found)
  // An empty list writes no field (see the proxy route's last onSend hook for why not removeHeader).
  for (const name of Object.keys(before)) if (after[name] === undefined) reply.header(name, [])
  const changed = Object.fromEntries(Object.entries(after).filter(([name, value]) => before[name] !== value))
  replaceReplyHeaders(reply, changed)
}

// zstd decompression arrived in Node 22.15 and 23.8.
const createZstdDecompress = (zlib as { createZstdDecompress?: () => Transform }).createZstdDecompress

/** The decoder of each content coding the proxy can read. */
const DECODERS: Readonly<Record<string, (() => Transform) | undefined>> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
  ...(createZstdDecompress === undefined ? {} : { zstd: createZstdDecompress })
}

/**
 * The body to send in place of `body`: decoded when the destination encoded it though it was
 * asked for `identity` (the codings of `Content-Encoding`, undone in reverse order), then
 * scrubbed as it streams. Removes `Content-Encoding` and `Content-Length` from `headers` (the
 * length changes), so the client gets it chunked (HTTP/1.1) or unsized (HTTP/2).
 * @throws ProxyError 502 `http_response_content_coding` for a coding the proxy cannot decode:
 * the body could hide a value in it.
 */
export function scrubbedBody (body: Readable, headers: Headers, scrubber: SecretScrubber, found: Set<string>): Readable {
  const codings = headerTokens(headers['content-encoding']).filter((token) => token !== 'identity')
  const decoders = codings.reverse().map((coding) => {
    const decoder = DECODERS[coding]
    if (decoder === undefined) throw new ProxyError('http_response_content_coding', 'The destination sent a body encoded in a way the proxy cannot read.', { details: 'content coding not readable for scrubbing' })
    return decoder()
  })
  Reflect.deleteProperty(headers, 'content-encoding')
  Reflect.deleteProperty(headers, 'content-length')
  const scrubbing = scrubber.transform(found)
  // Piped by hand, not with stream.pipeline: that makes an AbortController per call, and aborts
  // it (an AbortError built) at every end: a tenth of the proxy's CPU for small responses.
  const chain: Duplex[] = [...decoders, scrubbing]
  let source: Readable = body
  for (const next of chain) {
    source.pipe(next)
    source = next
  }
  // A failure anywhere reaches the stream the reply sends, which tears the others down; the
  // reply destroying it (the client left) tears them down too.
  const streams = [body, ...chain]
  let failed = false
  const failAll = (error?: Error): void => {
    if (failed) return
    failed = true
    for (const stream of streams) if (!stream.destroyed) stream.destroy(stream === scrubbing ? error : undefined)
  }
  // A body that is not what its Content-Encoding says is the destination's fault, not ours.
  const undecodable = (): void => failAll(new ProxyError('http_response_content_coding', 'The destination sent a body that does not decode as its Content-Encoding says.', { details: 'body does not decode as its content coding' }))
  for (const decoder of decoders) decoder.on('error', undecodable)
  for (const stream of streams) {
    stream.on('error', failAll)
    stream.once('close', () => { if (!stream.readableEnded) failAll(new Error('the response body ended early')) })
  }
  return scrubbing
}
