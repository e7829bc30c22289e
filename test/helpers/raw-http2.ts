import { connect as tlsConnect, type TLSSocket } from 'node:tls'

/** HTTP/2 frame types (RFC 9113 section 6). */
export const FRAME = { DATA: 0x0, HEADERS: 0x1, RST_STREAM: 0x3, SETTINGS: 0x4, PING: 0x6, GOAWAY: 0x7, WINDOW_UPDATE: 0x8, CONTINUATION: 0x9 } as const

/** Frame flags used by the hostile tests. */
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')

/** One frame: 9-byte header and payload. */
export function frame (type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9)
  head.writeUIntBE(payload.length, 0, 3)
  head[3] = type
  head[4] = flags
  head.writeUInt32BE(streamId & 0x7fffffff, 5)
  return Buffer.concat([head, payload])
}

/**
 * An HPACK header block of literal fields without indexing and without Huffman coding (RFC
 * 7541 section 6.2.2), so no compression state is shared with the peer. Names and values
 * must be shorter than 127 bytes.
 */
export function headerBlock (fields: ReadonlyArray<readonly [string, string]>): Buffer {
  return Buffer.concat(fields.map(([name, value]) => {
    if (name.length > 126 || value.length > 126) throw new Error('headerBlock: field too long for a one-byte length')
    return Buffer.concat([Buffer.from([0x00, name.length]), Buffer.from(name, 'latin1'), Buffer.from([value.length]), Buffer.from(value, 'latin1')])
  }))
}

/** RST_STREAM with `code` (8 is CANCEL). */
export function rstStream (streamId: number, code = 8): Buffer {
  const payload = Buffer.alloc(4)
  payload.writeUInt32BE(code)
  return frame(FRAME.RST_STREAM, 0, streamId, payload)
}

/** A frame the server sent. */
export interface ReceivedFrame {
  type: number
  flags: number
  streamId: number
  payload: Buffer
}

/** A raw HTTP/2 connection over TLS (ALPN h2) that writes frames verbatim and parses what comes back. */
export interface RawHttp2Connection {
  socket: TLSSocket
  /** Every frame received so far, in order. */
  frames: ReceivedFrame[]
  /** Resolves when the server closes the connection (or it fails). */
  closed: Promise<void>
  /** Resolves once a frame matching `wanted` has arrived (checked against earlier ones too). */
  frameMatching (wanted: (frame: ReceivedFrame) => boolean): Promise<ReceivedFrame>
  /** The error code of the server's GOAWAY, or undefined if none came. */
  goawayCode (): number | undefined
}

/**
 * Opens TLS to `port` on 127.0.0.1 with ALPN `h2`, sends the connection preface and an empty
 * SETTINGS frame, and acknowledges the server's SETTINGS as they arrive.
 */
export async function connectRawHttp2 (port: number, ca: Buffer): Promise<RawHttp2Connection> {
  const socket = tlsConnect({ host: '127.0.0.1', port, ca, ALPNProtocols: ['h2'] })
  socket.on('error', () => {})
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve())
    socket.once('error', reject)
  })
  return rawHttp2Over(socket)
}

/**
 * Speaks raw HTTP/2 on a TLS socket already open with ALPN `h2` (inside an intercepted tunnel,
 * say): sends the connection preface and an empty SETTINGS frame, and acknowledges the server's
 * SETTINGS as they arrive.
 */
export function rawHttp2Over (socket: TLSSocket): RawHttp2Connection {
  if (socket.alpnProtocol !== 'h2') throw new Error(`the server did not select h2: ${String(socket.alpnProtocol)}`)
  const frames: ReceivedFrame[] = []
  const waiters: Array<{ wanted: (frame: ReceivedFrame) => boolean, resolve: (frame: ReceivedFrame) => void }> = []
  let buffered = Buffer.alloc(0)
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk])
    while (buffered.length >= 9) {
      const length = buffered.readUIntBE(0, 3)
      if (buffered.length < 9 + length) break
      const received = {
        type: buffered[3] ?? 0,
        flags: buffered[4] ?? 0,
        streamId: buffered.readUInt32BE(5) & 0x7fffffff,
        payload: buffered.subarray(9, 9 + length)
      }
      buffered = buffered.subarray(9 + length)
      frames.push(received)
      if (received.type === FRAME.SETTINGS && (received.flags & FLAG.ACK) === 0 && socket.writable) socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0))
      for (const waiter of waiters.filter((candidate) => candidate.wanted(received))) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve(received)
      }
    }
  })
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0)]))
  return {
    socket,
    frames,
    closed,
    frameMatching: async (wanted) => {
      const earlier = frames.find(wanted)
      if (earlier !== undefined) return earlier
      return await new Promise((resolve) => waiters.push({ wanted, resolve }))
    },
    goawayCode: () => {
      const goaway = frames.find((received) => received.type === FRAME.GOAWAY)
      return goaway === undefined ? undefined : goaway.payload.readUInt32BE(4)
    }
  }
}
