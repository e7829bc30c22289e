// Builds RFC 6455 frames as a server would send them (or breaks them on purpose) and decodes
// what a client would receive, strictly.

/** Opcodes of RFC 6455 section 5.2. */
export const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const

/** How to build one frame; the defaults make a valid unmasked final frame. */
export interface FrameOptions {
  /** FIN bit; default true. */
  fin?: boolean
  /** RSV1/2/3 bits as they sit in the first byte (0x40, 0x20, 0x10); default 0. */
  rsv?: number
  /** Mask the payload as a client must; default false. */
  masked?: boolean
  /** Length encoding: 0 (7 bits), 2 (16 bits) or 8 (64 bits); default the shortest. */
  lengthBytes?: 0 | 2 | 8
}

/** The header of a frame whose payload is `length` bytes (a bigint for lengths above 2^53). */
export function frameHeader (opcode: number, length: number | bigint, options: FrameOptions = {}): Buffer {
  const size = BigInt(length)
  const lengthBytes = options.lengthBytes ?? (size < 126n ? 0 : size < 0x10000n ? 2 : 8)
  const first = ((options.fin ?? true) ? 0x80 : 0) | (options.rsv ?? 0) | opcode
  const maskBit = options.masked === true ? 0x80 : 0
  const header = Buffer.alloc(2 + lengthBytes)
  header[0] = first
  if (lengthBytes === 0) header[1] = maskBit | Number(size)
  else if (lengthBytes === 2) {
    header[1] = maskBit | 126
    header.writeUInt16BE(Number(size), 2)
  } else {
    header[1] = maskBit | 127
    header.writeBigUInt64BE(size, 2)
  }
  return header
}

/** One whole frame. */
export function frame (opcode: number, payload: Buffer | string, options: FrameOptions = {}): Buffer {
  const body = Buffer.from(payload)
  const header = frameHeader(opcode, body.length, options)
  if (options.masked !== true) return Buffer.concat([header, body])
  const mask = Buffer.from([0x11, 0x22, 0x33, 0x44])
  const masked = Buffer.from(body.map((byte, i) => byte ^ (mask[i % 4] as number)))
  return Buffer.concat([header, mask, masked])
}

/** A close frame's payload: the status code and the reason. */
export function closePayload (status: number, reason: Buffer | string): Buffer {
  const code = Buffer.alloc(2)
  code.writeUInt16BE(status)
  return Buffer.concat([code, Buffer.from(reason)])
}

/** One frame as received. */
export interface DecodedFrame {
  fin: boolean
  opcode: number
  payload: Buffer
}

/**
 * Decodes `bytes` into frames, throwing on anything a client must reject or that a server
 * should not send: a masked frame, RSV bits, a reserved opcode, a length not in its shortest
 * encoding, a control frame fragmented or over 125 bytes, bytes left after the last frame.
 */
export function decodeFrames (bytes: Buffer): DecodedFrame[] {
  const frames: DecodedFrame[] = []
  let offset = 0
  while (offset < bytes.length) {
    if (offset + 2 > bytes.length) throw new Error('truncated frame header')
    const first = bytes[offset] as number
    const second = bytes[offset + 1] as number
    if ((first & 0x70) !== 0) throw new Error('RSV bits set')
    if ((second & 0x80) !== 0) throw new Error('masked server frame')
    const opcode = first & 0x0f
    if (![0, 1, 2, 8, 9, 10].includes(opcode)) throw new Error(`reserved opcode ${opcode}`)
    let length = second & 0x7f
    let start = offset + 2
    if (length === 126) {
      length = bytes.readUInt16BE(start)
      if (length < 126) throw new Error('16-bit length not the shortest encoding')
      start += 2
    } else if (length === 127) {
      length = Number(bytes.readBigUInt64BE(start))
      if (length < 0x10000) throw new Error('64-bit length not the shortest encoding')
      start += 8
    }
    const fin = (first & 0x80) !== 0
    if (opcode >= 8 && (!fin || length > 125)) throw new Error('invalid control frame')
    if (start + length > bytes.length) throw new Error('truncated frame payload')
    frames.push({ fin, opcode, payload: bytes.subarray(start, start + length) })
    offset = start + length
  }
  return frames
}

/** One message (data opcode and whole payload) or control frame, in the order completed. */
export interface DecodedMessage {
  opcode: number
  payload: Buffer
}

/**
 * Reassembles fragmented messages, throwing on a continuation outside a message, a data frame
 * inside one, or a message left open. Control frames keep their place.
 */
export function decodeMessages (frames: readonly DecodedFrame[]): DecodedMessage[] {
  const messages: DecodedMessage[] = []
  let open: { opcode: number, parts: Buffer[] } | undefined
  for (const { fin, opcode, payload } of frames) {
    if (opcode >= 8) {
      messages.push({ opcode, payload })
      continue
    }
    if (opcode === OPCODE.continuation) {
      if (open === undefined) throw new Error('continuation outside a message')
    } else {
      if (open !== undefined) throw new Error('data frame inside a message')
      open = { opcode, parts: [] }
    }
    open.parts.push(payload)
    if (fin) {
      messages.push({ opcode: open.opcode, payload: Buffer.concat(open.parts) })
      open = undefined
    }
  }
  if (open !== undefined) throw new Error('message left open')
  return messages
}
