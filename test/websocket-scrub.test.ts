import { test } from 'tap'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { createWebSocketScrubStream, WebSocketScrubError } from '../lib/forward/websocket-scrub'
import type { ChunkScrubber } from '../lib/security/secret-scrubber'
import { closePayload, decodeFrames, decodeMessages, frame, frameHeader, OPCODE, type DecodedFrame, type DecodedMessage } from './helpers/websocket-frames'

const SECRET = Buffer.from('SECRETVALUE')
const PLACEHOLDER = Buffer.from('PLACEHOLDER_LONGER')

/** Replaces SECRET with the longer PLACEHOLDER, holding back a trailing prefix of SECRET. */
class ReplacingScrubber implements ChunkScrubber {
  #held = Buffer.alloc(0)

  get held (): number {
    return this.#held.length
  }

  push (chunk: Buffer): Buffer {
    const data = this.#held.length === 0 ? chunk : Buffer.concat([this.#held, chunk])
    const out: Buffer[] = []
    let start = 0
    for (let at = data.indexOf(SECRET); at !== -1; at = data.indexOf(SECRET, start)) {
      out.push(data.subarray(start, at), PLACEHOLDER)
      start = at + SECRET.length
    }
    let keep = Math.min(SECRET.length - 1, data.length - start)
    while (keep > 0 && !data.subarray(data.length - keep).equals(SECRET.subarray(0, keep))) keep--
    out.push(data.subarray(start, data.length - keep))
    this.#held = Buffer.from(data.subarray(data.length - keep))
    return Buffer.concat(out)
  }

  end (): Buffer {
    const rest = this.#held
    this.#held = Buffer.alloc(0)
    return rest
  }
}

/** What the scrubbed message must be: every SECRET replaced, every other byte kept. */
function scrubbed (payload: Buffer | string): Buffer {
  return Buffer.from(Buffer.from(payload).toString('latin1').split(SECRET.toString()).join(PLACEHOLDER.toString()), 'latin1')
}

/** Writes `chunks` one by one into a new scrubbing stream, then ends it; resolves with what it emitted and its error. */
async function run (chunks: readonly Buffer[]): Promise<{ output: Buffer, error: Error | undefined }> {
  const stream = createWebSocketScrubStream(() => new ReplacingScrubber())
  const parts: Buffer[] = []
  const errors: Error[] = []
  stream.on('data', (chunk: Buffer) => parts.push(chunk))
  stream.on('error', (error) => errors.push(error))
  const finished = new Promise<void>((resolve) => {
    stream.once('end', resolve)
    stream.once('close', resolve)
  })
  for (const chunk of chunks) {
    if (stream.destroyed) break
    stream.write(chunk)
  }
  if (!stream.destroyed) stream.end()
  await finished
  return { output: Buffer.concat(parts), error: errors[0] }
}

/** The frames emitted for `chunks`; fails the test on a stream error. */
async function framesOf (chunks: readonly Buffer[]): Promise<DecodedFrame[]> {
  const { output, error } = await run(chunks)
  if (error !== undefined) throw error
  return decodeFrames(output)
}

async function messagesOf (chunks: readonly Buffer[]): Promise<DecodedMessage[]> {
  return decodeMessages(await framesOf(chunks))
}

function summary (frames: readonly DecodedFrame[]): Array<[boolean, number, string]> {
  return frames.map(({ fin, opcode, payload }) => [fin, opcode, payload.toString('latin1')])
}

test('a single-frame text or binary message comes out as one frame with the secret replaced and every other byte kept', async (t) => {
  const binary = Buffer.concat([randomBytes(40).filter((byte) => byte !== SECRET[0]), SECRET, Buffer.from([0, 255, 1])])
  const frames = await framesOf([Buffer.concat([
    frame(OPCODE.text, 'token=SECRETVALUE; again SECRETVALUE'),
    frame(OPCODE.binary, binary),
    frame(OPCODE.text, 'nothing to hide')
  ])])
  t.same(summary(frames), [
    [true, OPCODE.text, 'token=PLACEHOLDER_LONGER; again PLACEHOLDER_LONGER'],
    [true, OPCODE.binary, scrubbed(binary).toString('latin1')],
    [true, OPCODE.text, 'nothing to hide']
  ])
})

test('each message gets a fresh scrubber: a secret split between two messages is not a match, and held-back bytes end with their message', async (t) => {
  const messages = await messagesOf([frame(OPCODE.text, 'first SECRET'), frame(OPCODE.text, 'VALUE second')])
  t.same(messages.map((message) => message.payload.toString()), ['first SECRET', 'VALUE second'])
})

test('a message written in several chunks is streamed as fragments: text first, then continuations, FIN on the last', async (t) => {
  const whole = frame(OPCODE.text, 'streamed without SECRETVALUE')
  const frames = await framesOf([whole.subarray(0, 10), whole.subarray(10, 19), whole.subarray(19)])
  t.same(summary(frames), [
    [false, OPCODE.text, 'streamed'],
    [false, OPCODE.continuation, ' without '],
    [true, OPCODE.continuation, 'PLACEHOLDER_LONGER']
  ])
})

test('a fragmented message is scrubbed across its fragments: a secret split between fragments is replaced, no empty fragment is sent', async (t) => {
  const fragments = [
    frame(OPCODE.binary, 'one SECR', { fin: false }),
    frame(OPCODE.continuation, 'ETVAL', { fin: false }),
    frame(OPCODE.continuation, '', { fin: false }),
    frame(OPCODE.continuation, 'UE two SECRETVALUE')
  ]
  t.same(summary(await framesOf([Buffer.concat(fragments)])), [[true, OPCODE.binary, 'one PLACEHOLDER_LONGER two PLACEHOLDER_LONGER']], 'written at once: one frame')
  t.same(summary(await framesOf(fragments)), [
    [false, OPCODE.binary, 'one '],
    [true, OPCODE.continuation, 'PLACEHOLDER_LONGER two PLACEHOLDER_LONGER']
  ], 'written frame by frame: what the scrubber released, no frame for the writes it held back or for the empty fragment')
})

test('a control frame between fragments is sent after the data bytes released before it and before the held-back ones', async (t) => {
  const first = frame(OPCODE.text, 'hello SEC', { fin: false })
  const ping = frame(OPCODE.ping, 'are you there')
  const last = frame(OPCODE.continuation, 'RETVALUE world')
  const expected: Array<[boolean, number, string]> = [
    [false, OPCODE.text, 'hello '],
    [true, OPCODE.ping, 'are you there'],
    [true, OPCODE.continuation, 'PLACEHOLDER_LONGER world']
  ]
  t.same(summary(await framesOf([Buffer.concat([first, ping, last])])), expected, 'written at once')
  t.same(summary(await framesOf([first, ping, last])), expected, 'written frame by frame')
})

test('ping, pong and close payloads are scrubbed; a grown ping is cut to 125 bytes, a grown close reason at a UTF-8 character boundary', async (t) => {
  const longPing = `${'p'.repeat(100)}SECRETVALUE${'q'.repeat(9)}`
  const accents = 'é'.repeat(56)
  const longReason = `SECRETVALUE${accents}`
  t.equal(Buffer.byteLength(longReason), 123, 'the close frame is 125 bytes before scrubbing')
  const frames = await framesOf([Buffer.concat([
    frame(OPCODE.ping, 'ping SECRETVALUE'),
    frame(OPCODE.pong, 'SECRETVALUE'),
    frame(OPCODE.ping, longPing),
    frame(OPCODE.ping, ''),
    frame(OPCODE.close, closePayload(1000, 'bye SECRETVALUE')),
    frame(OPCODE.close, closePayload(4001, longReason)),
    frame(OPCODE.close, '')
  ])])
  t.same(summary(frames.slice(0, 4)), [
    [true, OPCODE.ping, 'ping PLACEHOLDER_LONGER'],
    [true, OPCODE.pong, 'PLACEHOLDER_LONGER'],
    [true, OPCODE.ping, scrubbed(longPing).subarray(0, 125).toString('latin1')],
    [true, OPCODE.ping, '']
  ])
  const [bye, long, empty] = frames.slice(4)
  t.equal(bye?.opcode, OPCODE.close)
  t.equal(bye?.payload.readUInt16BE(0), 1000, 'status code kept')
  t.equal(bye?.payload.subarray(2).toString(), 'bye PLACEHOLDER_LONGER')
  t.equal(long?.payload.readUInt16BE(0), 4001, 'status code kept')
  const reason = long?.payload.subarray(2) ?? Buffer.alloc(0)
  t.equal(reason.length, 122, 'cut before the accent that would have been split at 123 bytes')
  t.equal(new TextDecoder('utf-8', { fatal: true }).decode(reason), `PLACEHOLDER_LONGER${'é'.repeat(52)}`)
  t.same(summary(empty === undefined ? [] : [empty]), [[true, OPCODE.close, '']])
})

test('the same messages come out however the input is split: at every split point and one byte at a time', async (t) => {
  const input = Buffer.concat([
    frame(OPCODE.text, 'alpha SECRETVALUE beta'),
    frame(OPCODE.binary, 'x SECRETV', { fin: false }),
    frame(OPCODE.ping, 'SECRETVALUE'),
    frame(OPCODE.continuation, 'ALUE y SECR', { fin: false }),
    frame(OPCODE.continuation, 'ETVALUE', { fin: false }),
    frame(OPCODE.continuation, ' z SECRET'),
    frame(OPCODE.text, ''),
    frame(OPCODE.binary, `${'m'.repeat(150)}SECRETVALUE${'n'.repeat(150)}`),
    frame(OPCODE.text, 'short, 64-bit length SECRETVALUE', { lengthBytes: 8 }),
    frame(OPCODE.close, closePayload(1001, 'SECRETVALUE gone'))
  ])
  const expected = [
    [OPCODE.text, 'alpha PLACEHOLDER_LONGER beta'],
    [OPCODE.ping, 'PLACEHOLDER_LONGER'],
    [OPCODE.binary, 'x PLACEHOLDER_LONGER y PLACEHOLDER_LONGER z SECRET'],
    [OPCODE.text, ''],
    [OPCODE.binary, `${'m'.repeat(150)}PLACEHOLDER_LONGER${'n'.repeat(150)}`],
    [OPCODE.text, 'short, 64-bit length PLACEHOLDER_LONGER'],
    [OPCODE.close, closePayload(1001, 'PLACEHOLDER_LONGER gone').toString('latin1')]
  ]
  const decode = (messages: DecodedMessage[]): Array<[number, string]> => messages.map(({ opcode, payload }) => [opcode, payload.toString('latin1')])
  t.same(decode(await messagesOf([input])), expected, 'in one write')
  let mismatches = 0
  for (let split = 1; split < input.length; split++) {
    const messages = decode(await messagesOf([input.subarray(0, split), input.subarray(split)]))
    if (JSON.stringify(messages) !== JSON.stringify(expected)) mismatches++
  }
  t.equal(mismatches, 0, `all ${input.length - 1} split points`)
  const bytes = Array.from({ length: input.length }, (_, i) => input.subarray(i, i + 1))
  t.same(decode(await messagesOf(bytes)), expected, 'one byte at a time')
})

test('frames with 16-bit and 64-bit lengths (300 and 70,000 bytes) are read and re-encoded with the right length', async (t) => {
  const medium = Buffer.concat([Buffer.alloc(140, 'a'), SECRET, Buffer.alloc(149, 'b')])
  const large = Buffer.alloc(70_000, 'c')
  SECRET.copy(large, 0)
  SECRET.copy(large, 65_530)
  SECRET.copy(large, large.length - SECRET.length)
  const input = Buffer.concat([frame(OPCODE.binary, medium), frame(OPCODE.binary, large)])
  t.equal(input[1], 126, 'the 300-byte frame has a 16-bit length')
  t.equal(input[2 + 2 + medium.length + 1], 127, 'the 70,000-byte frame has a 64-bit length')
  const whole = await framesOf([input])
  t.same(whole.map(({ fin, opcode, payload }) => [fin, opcode, payload.length]), [
    [true, OPCODE.binary, 300 + 7],
    [true, OPCODE.binary, 70_000 + 3 * 7]
  ], 'each message one frame, its length encoded in 16 and 64 bits (checked by the decoder)')
  t.ok(whole[0]?.payload.equals(scrubbed(medium)))
  t.ok(whole[1]?.payload.equals(scrubbed(large)))
  const chunks: Buffer[] = []
  for (let offset = 0; offset < input.length; offset += 1000) chunks.push(input.subarray(offset, offset + 1000))
  const messages = await messagesOf(chunks)
  t.ok(messages[0]?.payload.equals(scrubbed(medium)), '300 bytes in 1,000-byte writes')
  t.ok(messages[1]?.payload.equals(scrubbed(large)), '70,000 bytes in 1,000-byte writes')
})

test('a 64-bit length above 4 GiB is read whole: bytes past its low 32 bits still belong to the frame', async (t) => {
  const stream = createWebSocketScrubStream(() => new ReplacingScrubber())
  const parts: Buffer[] = []
  stream.on('data', (chunk: Buffer) => parts.push(chunk))
  const outcome = new Promise<Error | undefined>((resolve) => {
    stream.once('error', resolve)
    stream.once('end', () => resolve(undefined))
  })
  stream.write(frameHeader(OPCODE.binary, 2n ** 32n + 10n))
  for (let i = 0; i < 3; i++) stream.write(Buffer.alloc(100_000, 'a'))
  await new Promise((resolve) => setImmediate(resolve))
  t.notOk(stream.destroyed, 'no error after 300,000 bytes of a frame whose low 32 bits say 10')
  const frames = decodeFrames(Buffer.concat(parts))
  t.same(frames.map(({ fin, opcode }) => [fin, opcode]), [[false, OPCODE.binary], [false, OPCODE.continuation], [false, OPCODE.continuation]])
  t.equal(frames.reduce((sum, { payload }) => sum + payload.length, 0), 300_000)
  stream.end()
  t.match((await outcome)?.message, /ended inside a frame/, 'an end 300,000 bytes in is inside the frame')
})

test('protocol errors end the stream with a WebSocketScrubError whose message holds no payload bytes', async (t) => {
  const cases: Array<[string, Buffer[], RegExp]> = [
    ['a masked frame', [frame(OPCODE.text, 'SECRETVALUE', { masked: true })], /masked frame/],
    ['RSV1 set (permessage-deflate)', [frame(OPCODE.text, 'SECRETVALUE', { rsv: 0x40 })], /RSV bits/],
    ['RSV2 set', [frame(OPCODE.binary, 'SECRETVALUE', { rsv: 0x20 })], /RSV bits/],
    ['RSV3 set', [frame(OPCODE.ping, 'SECRETVALUE', { rsv: 0x10 })], /RSV bits/],
    ['reserved data opcode 3', [frame(0x3, 'SECRETVALUE')], /reserved opcode 3/],
    ['reserved control opcode 11', [frame(0xb, 'SECRETVALUE')], /reserved opcode 11/],
    ['a ping over 125 bytes', [frame(OPCODE.ping, Buffer.alloc(126, 'S'))], /control frame over 125 bytes/],
    ['a fragmented ping', [frame(OPCODE.ping, 'SECRETVALUE', { fin: false })], /fragmented control frame/],
    ['a continuation without a started message', [frame(OPCODE.continuation, 'SECRETVALUE')], /continuation frame outside/],
    ['a new data message while one is open', [frame(OPCODE.text, 'SECRETVALUE', { fin: false }), frame(OPCODE.binary, 'SECRETVALUE')], /started a data message inside/],
    ['a 64-bit length with the top bit set', [frameHeader(OPCODE.binary, 2n ** 63n), Buffer.from('SECRETVALUE')], /most significant bit/],
    ['an end inside a frame header', [Buffer.from([0x82, 126, 0x01])], /ended inside a frame/],
    ['an end inside a frame payload', [frame(OPCODE.text, 'SECRETVALUE').subarray(0, 8)], /ended inside a frame/],
    ['an end inside a fragmented message', [frame(OPCODE.text, 'SECRETVALUE', { fin: false })], /ended inside a frame or a fragmented message/]
  ]
  for (const [name, chunks, message] of cases) {
    const { error } = await run([frame(OPCODE.text, 'fine'), ...chunks])
    t.ok(error instanceof WebSocketScrubError, `${name}: fails with a WebSocketScrubError`)
    t.match(error?.message, message, name)
    t.notMatch(error?.message, /SECRET|PLACEHOLDER|fine/, `${name}: no payload in the message`)
  }
  const { error } = await run([frame(OPCODE.text, 'fine'), frame(OPCODE.close, closePayload(1000, 'bye'))])
  t.equal(error, undefined, 'a valid stream ends without an error')
})

test('an 8 MiB frame is streamed: output leaves before the input ends, in fragments no larger than a write, secrets replaced', async (t) => {
  const SIZE = 8 * 1024 * 1024
  const CHUNK = 64 * 1024
  const payload = Buffer.alloc(SIZE, 'z')
  for (const at of [0, CHUNK - 5, 3 * CHUNK - 1, SIZE / 2, SIZE - SECRET.length]) SECRET.copy(payload, at)
  const input = Buffer.concat([frameHeader(OPCODE.binary, SIZE), payload])

  const stream = createWebSocketScrubStream(() => new ReplacingScrubber())
  const parts: Buffer[] = []
  let received = 0
  stream.on('data', (chunk: Buffer) => { parts.push(chunk); received += chunk.length })
  const ended = once(stream, 'end')
  let receivedBeforeLastWrite = 0
  for (let offset = 0; offset < input.length; offset += CHUNK) {
    if (offset + CHUNK >= input.length) receivedBeforeLastWrite = received
    if (!stream.write(input.subarray(offset, offset + CHUNK))) await once(stream, 'drain')
  }
  stream.end()
  await ended

  t.ok(receivedBeforeLastWrite > SIZE - 2 * CHUNK, `${receivedBeforeLastWrite} bytes out before the last write`)
  const frames = decodeFrames(Buffer.concat(parts))
  t.ok(frames.length > 100, `${frames.length} fragments`)
  t.ok(frames.every((item) => item.payload.length <= CHUNK + PLACEHOLDER.length), 'no fragment larger than a write plus one replacement')
  t.ok(decodeMessages(frames)[0]?.payload.equals(scrubbed(payload)), 'the message reassembles scrubbed')
})
