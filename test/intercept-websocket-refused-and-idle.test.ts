import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import type { TLSSocket } from 'node:tls'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'
import { readFrames, startWebSocketOrigin, textFrame } from './helpers/websocket-origin'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'

/** Everything the socket receives until it closes. */
function allUntilClose (socket: TLSSocket): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1')))
  })
}

function handshake (path: string, target: string): string {
  return [`GET ${path} HTTP/1.1`, `Host: ${target}`, 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`].join('\r\n') + '\r\n\r\n'
}

test('an upgrade answered 302 or 200 is relayed as an ordinary response (Location, chunked body intact), the early frame never forwarded, the connection closed after it; its access line counts the body sent', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startWebSocketOrigin(t, pki)
  const log = capturedLog()
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki), server: { logger: log.logger } })
  const target = `127.0.0.1:${origin.port}`

  const redirected = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const redirectText = allUntilClose(redirected)
  redirected.write(Buffer.concat([Buffer.from(handshake('/302', target)), textFrame('must not pass', true)]))
  const redirect = await redirectText
  t.match(redirect, /^HTTP\/1\.1 302 Found\r\n/)
  t.match(redirect, /\r\nlocation: https:\/\/127\.0\.0\.1\/elsewhere\r\n/i)
  t.match(redirect, /\r\nconnection: close\r\n/i, 'the client connection closes after the answer')
  t.notMatch(redirect, /\r\nupgrade:/i)
  t.notMatch(redirect, /must not pass/)

  const plain = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const plainText = allUntilClose(plain)
  plain.write(Buffer.concat([Buffer.from(handshake('/200', target)), textFrame('must not pass', true)]))
  const page = await plainText
  t.match(page, /^HTTP\/1\.1 200 OK\r\n/)
  t.match(page, /\r\n\r\n(?:[0-9a-f]+\r\n)?plain (?:\r\n[0-9a-f]+\r\n)?page/, 'the body arrives whole')
  t.notMatch(page, /\r\nupgrade:/i)
  t.same(origin.upgrades.map((seen) => [seen.url, seen.earlyBytes]), [['/302', 0], ['/200', 0]], 'the origin never received the frames sent with the handshakes')
  await eventually(() => log.access().filter((line) => line.kind === 'intercepted').length === 2)
  t.match(log.access().find((line) => line.kind === 'intercepted' && line.status === 200), { bytesOut: 10 }, 'the 10 body bytes sent are counted')
})

test('an intercepted WebSocket without traffic for tunnelIdleTimeout is closed on both sides, after traffic kept it open', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startWebSocketOrigin(t, pki, 0)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { limits: { tunnelIdleTimeout: 1500 } },
    interception: interceptAll(pki)
  })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const everything = allUntilClose(socket)
  let received = Buffer.alloc(0)
  const framesSoFar = (): string[] => readFrames(received.subarray(received.indexOf('\r\n\r\n') + 4))
  const nextFrames = (count: number): Promise<void> => new Promise((resolve) => {
    const check = (): void => {
      if (received.includes('\r\n\r\n') && framesSoFar().length >= count) { socket.removeListener('data', check); resolve() }
    }
    socket.on('data', check)
  })
  socket.on('data', (chunk: Buffer) => { received = Buffer.concat([received, chunk]) })
  socket.write(handshake('/idle', target))
  // Traffic spread over more than one idle period (5 x 400 ms > 1500 ms) keeps the relay open;
  // the spacing is far below the timeout, so a slow machine cannot make this flaky.
  const words = ['one', 'two', 'three', 'four', 'five']
  const opened = Date.now()
  for (const [index, word] of words.entries()) {
    const echoed = nextFrames(index + 1)
    socket.write(textFrame(word, true))
    await echoed
    await new Promise<void>((resolve) => setTimeout(resolve, 400).unref())
  }
  t.same(framesSoFar(), words, 'all echoed while traffic flowed')
  t.ok(Date.now() - opened > 1500, 'the traffic spanned more than one idle period')
  await everything
  t.ok(socket.destroyed, 'the client side was closed by the idle timeout')
  t.notOk(framesSoFar().includes('bye'), 'closed by the proxy, not by a half-close the origin answered')
  while (origin.closed < 1) await new Promise<void>((resolve) => setImmediate(resolve))
  t.equal(origin.closed, 1, 'the destination side was closed too')
})
