import { createHash } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { createServer, type Server } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import type { Test } from 'tap'
import type { InterceptionPki } from './interception-pki'

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

/** What the WebSocket origin saw of one upgrade request. */
export interface SeenUpgrade {
  url: string
  headers: IncomingMessage['headers']
  /** Bytes that arrived after the request head before the origin answered. */
  earlyBytes: number
}

/** A started WebSocket origin over TLS on 127.0.0.1. */
export interface WebSocketOrigin {
  server: Server
  port: number
  upgrades: SeenUpgrade[]
  /** Upgraded (101) connections that have closed on the origin's side. */
  closed: number
}

/** The Sec-WebSocket-Accept value for a key (RFC 6455 section 4.2.2). */
export function acceptKey (key: string): string {
  return createHash('sha1').update(key + GUID).digest('base64')
}

/** One small WebSocket text frame (payload under 126 bytes), masked as a client must send it. */
export function textFrame (text: string, masked: boolean): Buffer {
  const payload = Buffer.from(text)
  if (!masked) return Buffer.concat([Buffer.from([0x81, payload.length]), payload])
  const mask = Buffer.from([1, 2, 3, 4])
  const body = Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] as number)))
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, body])
}

/** Reads the payloads of complete small frames at the start of `buffer` (masked or not). */
export function readFrames (buffer: Buffer): string[] {
  const texts: string[] = []
  let offset = 0
  while (offset + 2 <= buffer.length) {
    const length = (buffer[offset + 1] as number) & 0x7f
    const masked = ((buffer[offset + 1] as number) & 0x80) !== 0
    const start = offset + 2 + (masked ? 4 : 0)
    if (start + length > buffer.length) break
    const payload = Buffer.from(buffer.subarray(start, start + length))
    if (masked) for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (buffer[offset + 2 + (i % 4)] as number)
    texts.push(payload.toString())
    offset = start + length
  }
  return texts
}

/** Non-101 answers the origin gives to an upgrade request, by path. */
const REFUSALS: Record<string, string> = {
  '/426': 'HTTP/1.1 426 Upgrade Required\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nUpgrade: websocket\r\nConnection: close\r\n\r\nnot upgrading',
  '/302': 'HTTP/1.1 302 Found\r\nLocation: https://127.0.0.1/elsewhere\r\nContent-Length: 0\r\n\r\n',
  '/200': 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nplain \r\n4\r\npage\r\n0\r\n\r\n'
}

/**
 * Starts a minimal RFC 6455 origin on node:https (certificate from the destination CA): an
 * upgrade to `/426`, `/302` or `/200` is answered with that status and no upgrade (426 and 200
 * with a body, 302 with a Location), any other one 101 after `answerDelayMs`, then every text
 * frame is echoed and, when the client half-closes, a `bye` frame is sent before the origin ends
 * its side. `closed` counts upgraded connections the origin saw close. Closed at teardown.
 */
export async function startWebSocketOrigin (t: Test, pki: InterceptionPki, answerDelayMs = 100): Promise<WebSocketOrigin> {
  const upgrades: SeenUpgrade[] = []
  const sockets = new Set<Socket>()
  const server = createServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key })
  server.on('tlsClientError', () => {})
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    sockets.add(socket)
    socket.on('error', () => {})
    const seen: SeenUpgrade = { url: req.url ?? '', headers: req.headers, earlyBytes: head.length }
    upgrades.push(seen)
    const countEarly = (chunk: Buffer): void => { seen.earlyBytes += chunk.length }
    socket.on('data', countEarly)
    setTimeout(() => {
      socket.removeListener('data', countEarly)
      const refusal = REFUSALS[req.url ?? '']
      if (refusal !== undefined) {
        socket.end(refusal)
        return
      }
      socket.once('close', () => { origin.closed += 1 })
      const key = String(req.headers['sec-websocket-key'])
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptKey(key)}\r\nX-Origin: ws\r\n\r\n`)
      let buffered = Buffer.alloc(0)
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk])
        const texts = readFrames(buffered)
        if (texts.length === 0) return
        buffered = Buffer.alloc(0)
        for (const text of texts) socket.write(textFrame(text, false))
      })
      socket.once('end', () => socket.end(textFrame('bye', false)))
    }, answerDelayMs)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const socket of sockets) socket.destroy()
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  const origin: WebSocketOrigin = { server, port: (server.address() as AddressInfo).port, upgrades, closed: 0 }
  return origin
}
