// Rewrites the frames a WebSocket server sends (RFC 6455) so that every message's payload passes
// through a scrubber that may change its length: data messages are streamed and re-fragmented,
// control frames scrubbed whole, and anything that cannot be read safely ends the stream.

import { Transform, type TransformCallback } from 'node:stream'
import type { ChunkScrubber } from '../security/secret-scrubber'

/**
 * The server's byte stream is not one the scrubbing stream can read safely (a masked or
 * compressed frame, a reserved opcode, a broken fragmentation sequence, a truncated frame).
 * Its message never holds payload bytes.
 */
export class WebSocketScrubError extends Error {
  override readonly name = 'WebSocketScrubError'
}

/**
 * Builds the stream that the bytes a WebSocket server sends (after its 101) go through before
 * they reach the client. Every data message's payload goes through a fresh scrubber from
 * `createScrubber` (one per message, across its fragments) and is streamed out as one or more
 * frames, each carrying what the scrubber released so far (the first with the message's opcode,
 * then continuations, FIN on the last), so the stream never holds more than a partial frame
 * header, a control frame (at most 125 bytes) and the scrubber's hold-back. Ping, pong and close
 * payloads are scrubbed whole (a fresh scrubber each; for close only the reason, the status code
 * kept) and cut to 125 bytes if they grew (a close reason at a UTF-8 character boundary); they
 * are written after the data bytes released before them.
 *
 * The output may refer to the memory of the written chunks (payload slices are not copied): a
 * chunk must not be reused once written. The stream fails with a WebSocketScrubError, and writes
 * nothing more, on a masked frame, RSV bits set (an extension the client did not get to
 * negotiate, such as permessage-deflate), a reserved opcode, a control frame that is fragmented
 * or over 125 bytes, a continuation outside a message, a new data message inside one, a 64-bit
 * length with its top bit set, or an end of input inside a frame or a fragmented message; it
 * fails with the scrubber's error if the scrubber throws.
 */
export function createWebSocketScrubStream (createScrubber: () => ChunkScrubber): Transform {
  return new WebSocketScrubStream(createScrubber)
}

const OPCODE_CONTINUATION = 0x0
const OPCODE_BINARY = 0x2
const OPCODE_CLOSE = 0x8
const OPCODE_PONG = 0xa
const MAX_CONTROL_PAYLOAD = 125
const CLOSE_STATUS_LENGTH = 2
const TWO_TO_THE_32 = 2 ** 32
// Output pieces up to this size are copied together before they are pushed, so a frame header
// and a small payload leave as one buffer (one write) instead of several tiny ones.
const COALESCE_LIMIT = 16 * 1024

/** Where the reader is: in the first two header bytes, in the extended length, or in a payload. */
type Reading = 'start' | 'length' | 'payload'

class WebSocketScrubStream extends Transform {
  readonly #createScrubber: () => ChunkScrubber
  readonly #header = Buffer.alloc(14)
  #headerLength = 0
  #headerNeeded = 2
  #reading: Reading = 'start'

  #frameOpcode = 0
  #frameFin = false
  // The payload bytes left in the current frame: high × 2^32 + low, exact for every 63-bit length.
  #remainingHigh = 0
  #remainingLow = 0
  #control: Buffer | undefined
  #controlFilled = 0

  #message: ChunkScrubber | undefined
  #messageOpcode = 0
  #messageStarted = false
  // What the message's scrubber released and no frame carries yet.
  #pending: Buffer[] = []
  #pendingLength = 0
  // Frame headers and payloads to push at the end of the current write.
  #out: Buffer[] = []

  constructor (createScrubber: () => ChunkScrubber) {
    super()
    this.#createScrubber = createScrubber
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.#read(chunk)
      if (this.#message !== undefined) this.#frameReleased(false)
    } catch (error) {
      this.#out = []
      callback(error instanceof Error ? error : new Error('The WebSocket scrubber failed.', { cause: error }))
      return
    }
    this.#pushOut()
    callback()
  }

  override _flush (callback: TransformCallback): void {
    if (this.#reading !== 'start' || this.#headerLength > 0 || this.#message !== undefined) {
      callback(new WebSocketScrubError('The WebSocket server\'s stream ended inside a frame or a fragmented message.'))
      return
    }
    callback()
  }

  #read (chunk: Buffer): void {
    const length = chunk.length
    let offset = 0
    while (offset < length) {
      if (this.#reading !== 'payload') {
        offset = this.#readHeader(chunk, offset)
        continue
      }
      const available = length - offset
      const take = this.#remainingHigh > 0 || available < this.#remainingLow ? available : this.#remainingLow
      const payload = chunk.subarray(offset, offset + take)
      offset += take
      if (take <= this.#remainingLow) {
        this.#remainingLow -= take
      } else {
        this.#remainingHigh -= 1
        this.#remainingLow += TWO_TO_THE_32 - take
      }
      if (this.#control !== undefined) {
        this.#controlFilled += payload.copy(this.#control, this.#controlFilled)
      } else {
        this.#release((this.#message as ChunkScrubber).push(payload))
      }
      if (this.#remainingHigh === 0 && this.#remainingLow === 0) this.#endFrame()
    }
  }

  /** Copies header bytes from `chunk` at `offset`; returns the offset after them. */
  #readHeader (chunk: Buffer, offset: number): number {
    const header = this.#header
    const needed = this.#headerNeeded
    while (this.#headerLength < needed && offset < chunk.length) {
      header[this.#headerLength++] = chunk[offset++] as number
    }
    if (this.#headerLength < needed) return offset
    if (this.#reading === 'start') {
      this.#headerNeeded = this.#checkFrameStart()
      this.#reading = 'length'
      if (this.#headerNeeded > needed) return offset
    }
    this.#startFrame()
    return offset
  }

  /** Checks the first two header bytes; returns the header's length without a mask key. */
  #checkFrameStart (): number {
    const first = this.#header[0] as number
    const second = this.#header[1] as number
    if ((first & 0x70) !== 0) {
      throw new WebSocketScrubError('The WebSocket server sent a frame with RSV bits set (an extension such as compression that cannot be scrubbed).')
    }
    if ((second & 0x80) !== 0) throw new WebSocketScrubError('The WebSocket server sent a masked frame.')
    const fin = (first & 0x80) !== 0
    const opcode = first & 0x0f
    const length = second & 0x7f
    if (opcode >= OPCODE_CLOSE) {
      if (opcode > OPCODE_PONG) throw new WebSocketScrubError(`The WebSocket server sent a frame with the reserved opcode ${opcode}.`)
      if (!fin) throw new WebSocketScrubError('The WebSocket server sent a fragmented control frame.')
      if (length > MAX_CONTROL_PAYLOAD) throw new WebSocketScrubError('The WebSocket server sent a control frame over 125 bytes.')
    } else {
      if (opcode > OPCODE_BINARY) throw new WebSocketScrubError(`The WebSocket server sent a frame with the reserved opcode ${opcode}.`)
      if (opcode === OPCODE_CONTINUATION && this.#message === undefined) {
        throw new WebSocketScrubError('The WebSocket server sent a continuation frame outside a fragmented message.')
      }
      if (opcode !== OPCODE_CONTINUATION && this.#message !== undefined) {
        throw new WebSocketScrubError('The WebSocket server started a data message inside a fragmented message.')
      }
    }
    this.#frameFin = fin
    this.#frameOpcode = opcode
    return length === 126 ? 4 : length === 127 ? 10 : 2
  }

  #startFrame (): void {
    const header = this.#header
    const length = (header[1] as number) & 0x7f
    if (length < 126) {
      this.#remainingHigh = 0
      this.#remainingLow = length
    } else if (length === 126) {
      this.#remainingHigh = 0
      this.#remainingLow = header.readUInt16BE(2)
    } else {
      const high = header.readUInt32BE(2)
      if (high >= 0x80000000) throw new WebSocketScrubError('The WebSocket server sent a 64-bit frame length with its most significant bit set.')
      this.#remainingHigh = high
      this.#remainingLow = header.readUInt32BE(6)
    }
    this.#headerLength = 0
    this.#headerNeeded = 2
    this.#reading = 'payload'

    const opcode = this.#frameOpcode
    if (opcode >= OPCODE_CLOSE) {
      this.#control = Buffer.allocUnsafe(this.#remainingLow)
      this.#controlFilled = 0
    } else if (opcode !== OPCODE_CONTINUATION) {
      this.#message = this.#createScrubber()
      this.#messageOpcode = opcode
      this.#messageStarted = false
    }
    if (this.#remainingHigh === 0 && this.#remainingLow === 0) this.#endFrame()
  }

  #endFrame (): void {
    this.#reading = 'start'
    const control = this.#control
    if (control !== undefined) {
      this.#control = undefined
      // Data the message's scrubber already released goes out before the control frame.
      if (this.#message !== undefined) this.#frameReleased(false)
      const payload = this.#scrubControl(this.#frameOpcode, control)
      this.#out.push(frameHeader(true, this.#frameOpcode, payload.length), payload)
      return
    }
    if (!this.#frameFin) return
    this.#release((this.#message as ChunkScrubber).end())
    this.#frameReleased(true)
    this.#message = undefined
  }

  #release (bytes: Buffer): void {
    if (bytes.length === 0) return
    this.#pending.push(bytes)
    this.#pendingLength += bytes.length
  }

  /** Frames what the message's scrubber released; a non-final frame only if it carries bytes. */
  #frameReleased (fin: boolean): void {
    if (!fin && this.#pendingLength === 0) return
    const opcode = this.#messageStarted ? OPCODE_CONTINUATION : this.#messageOpcode
    this.#out.push(frameHeader(fin, opcode, this.#pendingLength))
    for (const piece of this.#pending) this.#out.push(piece)
    this.#pending = []
    this.#pendingLength = 0
    this.#messageStarted = !fin
  }

  #scrubControl (opcode: number, payload: Buffer): Buffer {
    const scrubber = this.#createScrubber()
    if (opcode === OPCODE_CLOSE && payload.length >= CLOSE_STATUS_LENGTH) {
      const reason = scrubWhole(scrubber, payload.subarray(CLOSE_STATUS_LENGTH))
      const room = MAX_CONTROL_PAYLOAD - CLOSE_STATUS_LENGTH
      return Buffer.concat([payload.subarray(0, CLOSE_STATUS_LENGTH), reason.length > room ? reason.subarray(0, utf8Boundary(reason, room)) : reason])
    }
    const scrubbed = scrubWhole(scrubber, payload)
    return scrubbed.length > MAX_CONTROL_PAYLOAD ? scrubbed.subarray(0, MAX_CONTROL_PAYLOAD) : scrubbed
  }

  #pushOut (): void {
    const out = this.#out
    if (out.length === 0) return
    this.#out = []
    let group: Buffer[] = []
    let groupLength = 0
    const pushGroup = (): void => {
      if (group.length === 0) return
      this.push(group.length === 1 ? group[0] : Buffer.concat(group, groupLength))
      group = []
      groupLength = 0
    }
    for (const piece of out) {
      if (piece.length > COALESCE_LIMIT) {
        pushGroup()
        this.push(piece)
        continue
      }
      group.push(piece)
      groupLength += piece.length
      if (groupLength >= COALESCE_LIMIT) pushGroup()
    }
    pushGroup()
  }
}

function frameHeader (fin: boolean, opcode: number, length: number): Buffer {
  const first = (fin ? 0x80 : 0) | opcode
  if (length < 126) {
    const header = Buffer.allocUnsafe(2)
    header[0] = first
    header[1] = length
    return header
  }
  if (length < 0x10000) {
    const header = Buffer.allocUnsafe(4)
    header[0] = first
    header[1] = 126
    header.writeUInt16BE(length, 2)
    return header
  }
  const header = Buffer.allocUnsafe(10)
  header[0] = first
  header[1] = 127
  header.writeUInt32BE(Math.floor(length / TWO_TO_THE_32), 2)
  header.writeUInt32BE(length % TWO_TO_THE_32, 6)
  return header
}

function scrubWhole (scrubber: ChunkScrubber, payload: Buffer): Buffer {
  const released = scrubber.push(payload)
  const rest = scrubber.end()
  return rest.length === 0 ? released : Buffer.concat([released, rest])
}

/** The longest length up to `limit` that does not cut a UTF-8 character of `text` in two. */
function utf8Boundary (text: Buffer, limit: number): number {
  let cut = limit
  // A continuation byte (10xxxxxx) right after the cut belongs to a character that starts before it.
  while (cut > 0 && ((text[cut] as number) & 0xc0) === 0x80) cut--
  return cut
}
