// A recorded body as HAR content: decoded when it came compressed, text as text and anything else
// as base64, cut at the capture's limit, secret values replaced by their placeholders.

import { constants, createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import type { Transform } from 'node:stream'
import { isUtf8 } from 'node:buffer'
import type { ForwardProxyHarContent } from '../../types/capture'
import type { SecretScrubber } from '../security/secret-scrubber'
import type { BodyTap } from './capture-record'

const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|ecmascript|x-www-form-urlencoded|graphql|x-ndjson)\b|[^;]*\+(json|xml)\b)/i

/** A body's bytes as a HAR text field: `text`, and `encoding: 'base64'` when it is not text. */
interface BodyText {
  readonly text: string
  readonly encoding?: 'base64'
}

/**
 * The content of a response body as the client received it. `tap` saw the bytes on the wire
 * (encoded when `contentEncoding` names gzip, deflate or br); what is kept is decoded, up to
 * `limit` bytes, and scrubbed. `size` is the decoded length when the whole body was kept, the wire
 * length otherwise, with a comment saying how much is there.
 */
export async function responseContent (
  tap: BodyTap | undefined,
  mimeType: string,
  contentEncoding: string | undefined,
  limit: number,
  scrubber: SecretScrubber | null
): Promise<ForwardProxyHarContent> {
  if (tap === undefined || tap.total === 0) return { size: 0, mimeType }
  if (limit === 0) return { size: tap.total, mimeType, comment: 'body not kept (maxBodyBytes 0)' }
  const whole = tap.complete && tap.total <= limit
  const decoded = await decode(tap.bytes(), contentEncoding, limit)
  const complete = whole && !decoded.partial && decoded.bytes.length <= limit
  const bytes = scrubbed(decoded.bytes.subarray(0, limit), scrubber, complete)
  const body = bodyText(bytes, mimeType)
  if (complete) {
    return {
      size: decoded.bytes.length,
      ...(decoded.decoded && decoded.bytes.length > tap.total ? { compression: decoded.bytes.length - tap.total } : {}),
      mimeType,
      ...body
    }
  }
  const note = decoded.decoded ? `, decoded from ${contentEncoding ?? ''}` : ''
  // Every byte that passed is kept, but the body never ended: its client left, or its destination cut it.
  const comment = !tap.complete && tap.total <= limit
    ? `cut short: the body stopped after ${tap.total} bytes${note}`
    : `truncated: the first ${bytes.length} bytes kept${note} (maxBodyBytes ${limit})`
  return { size: tap.total, mimeType, ...body, comment }
}

/** A request body as HAR `postData`: text, or base64 with `_encoding`, cut at `limit`, scrubbed. */
export function requestPostData (tap: BodyTap | undefined, mimeType: string, limit: number, scrubber: SecretScrubber | null): { mimeType: string, text: string, _encoding?: 'base64', comment?: string } | undefined {
  if (tap === undefined || tap.total === 0) return undefined
  if (limit === 0) return { mimeType, text: '', comment: `body of ${tap.total} bytes not kept (maxBodyBytes 0)` }
  const kept = tap.bytes()
  const bytes = scrubbed(kept, scrubber, tap.total === kept.length)
  const body = bodyText(bytes, mimeType)
  return {
    mimeType,
    text: body.text,
    ...(body.encoding === undefined ? {} : { _encoding: body.encoding }),
    ...(tap.total > bytes.length ? { comment: `truncated: the first ${bytes.length} of ${tap.total} bytes kept (maxBodyBytes ${limit})` } : {})
  }
}

/**
 * `bytes` with every secret value replaced by its placeholder. A body cut short (not `whole`)
 * loses its last bytes that could be the beginning of a value: the rest of it was cut off, and
 * its beginning must not be written either.
 */
function scrubbed (bytes: Buffer, scrubber: SecretScrubber | null, whole: boolean): Buffer {
  if (scrubber === null || bytes.length === 0) return bytes
  const chunks = scrubber.chunkScrubber(new Set())
  const sure = chunks.push(bytes)
  return whole ? Buffer.concat([sure, chunks.end()]) : sure
}

/**
 * `bytes` as text when the type is textual and they are UTF-8, else base64. A body cut at the
 * limit may end inside a character: up to three bytes of an unfinished sequence are dropped.
 */
function bodyText (bytes: Buffer, mimeType: string): BodyText {
  if (TEXT_TYPES.test(mimeType)) {
    for (let end = bytes.length; end >= Math.max(0, bytes.length - 3); end--) {
      const text = end === bytes.length ? bytes : bytes.subarray(0, end)
      if (isUtf8(text)) return { text: text.toString('utf8') }
    }
  }
  return { text: bytes.toString('base64'), encoding: 'base64' }
}

/** A body as decoded: `decoded` false when it was left as it came, `partial` when decoding stopped at the limit. */
interface DecodedBody {
  readonly bytes: Buffer
  readonly decoded: boolean
  readonly partial: boolean
}

const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: () => createGunzip(FLUSH_AS_IT_GOES),
  'x-gzip': () => createGunzip(FLUSH_AS_IT_GOES),
  // zlib's framing; raw deflate (sent by some servers under this name) fails and stays undecoded.
  deflate: () => createInflate(FLUSH_AS_IT_GOES),
  br: () => createBrotliDecompress({ finishFlush: constants.BROTLI_OPERATION_FLUSH })
}

// A body's beginning has no proper end: decode what is there instead of failing at its end.
const FLUSH_AS_IT_GOES = { finishFlush: constants.Z_SYNC_FLUSH }

/**
 * Decodes `bytes` (a body, or its beginning) for the encodings Node knows, stopping once past
 * `limit`: a small compressed body that expands enormously costs no more memory than the limit.
 * `partial` says the decoded bytes are not all the body held. An unknown or broken encoding leaves
 * the bytes as they are.
 */
function decode (bytes: Buffer, contentEncoding: string | undefined, limit: number): Promise<DecodedBody> {
  const decoder = DECODERS[contentEncoding?.trim().toLowerCase() ?? '']
  if (decoder === undefined) return Promise.resolve({ bytes, decoded: false, partial: false })
  return new Promise((resolve) => {
    const stream = decoder()
    const chunks: Buffer[] = []
    let length = 0
    const finish = (partial: boolean): void => {
      stream.removeAllListeners('data')
      stream.destroy()
      resolve({ bytes: Buffer.concat(chunks), decoded: true, partial })
    }
    stream.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      length += chunk.length
      if (length > limit) finish(true)
    })
    stream.once('end', () => finish(false))
    stream.once('error', () => {
      stream.destroy()
      resolve({ bytes, decoded: false, partial: false })
    })
    stream.end(bytes)
  })
}
