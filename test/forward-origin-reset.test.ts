import { test } from 'tap'
import { connect } from 'node:net'
import type { ServerResponse } from 'node:http'
import { startOrigin, startProxy } from './helpers/servers'
import { deferred } from './helpers/deferred'

/**
 * Sends `request` to the proxy; once `marker` has reached the client, resets the origin's
 * connection (TCP RST) and collects what the client gets until the proxy closes.
 */
function exchangeThenReset (proxyPort: number, request: string, marker: string, originResponse: Promise<ServerResponse>): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyPort, '127.0.0.1', () => socket.write(request))
    const guard = setTimeout(() => { socket.destroy(); reject(new Error(`the proxy did not close within 5 s; got: ${text}`)) }, 5000)
    let text = ''
    let reset = false
    socket.on('error', () => {})
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
      if (!reset && text.includes(marker)) {
        reset = true
        originResponse.then((res) => res.socket?.resetAndDestroy(), () => {})
      }
    })
    socket.on('close', () => { clearTimeout(guard); resolve(text) })
  })
}

function holdResponse (headers: Record<string, string>, firstBytes: string) {
  const held = deferred<ServerResponse>()
  const handler = (_req: unknown, res: ServerResponse): void => {
    res.writeHead(200, headers)
    res.write(firstBytes)
    held.resolve(res)
  }
  return { held: held.promise, handler }
}

test('an origin that resets mid-body leaves the client with a visibly incomplete chunked body', async (t) => {
  const { held, handler } = holdResponse({ 'content-type': 'text/plain' }, 'partial-body-')
  const origin = await startOrigin(t, handler)
  const proxy = await startProxy(t)
  const text = await exchangeThenReset(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 'partial-body-', held)
  t.match(text, /^HTTP\/1\.1 200 /, 'the head was already sent')
  t.match(text, /\r\ntransfer-encoding: chunked\r\n/i)
  t.notOk(text.endsWith('0\r\n\r\n'), 'no final chunk: the client can tell the body was cut')
})

test('an origin that resets mid-body with Content-Length leaves the client short of it', async (t) => {
  const { held, handler } = holdResponse({ 'content-type': 'text/plain', 'content-length': '1000' }, 'only-these-bytes')
  const origin = await startOrigin(t, handler)
  const proxy = await startProxy(t)
  const text = await exchangeThenReset(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 'only-these-bytes', held)
  t.match(text, /^HTTP\/1\.1 200 /)
  t.match(text, /\r\ncontent-length: 1000\r\n/i)
  t.equal(text.slice(text.indexOf('\r\n\r\n') + 4), 'only-these-bytes', 'the connection closed before the announced length')
})
