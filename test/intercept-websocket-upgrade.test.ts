import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import type { TLSSocket } from 'node:tls'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, staticProvider, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'
import { acceptKey, readFrames, startWebSocketOrigin, textFrame } from './helpers/websocket-origin'

/** Collects what a socket receives; `until` resolves once `done(all bytes)` holds or the socket closes. */
function collector (socket: TLSSocket) {
  let received = Buffer.alloc(0)
  let closed = false
  const waiters: Array<() => void> = []
  const wake = (): void => { for (const waiter of waiters.splice(0)) waiter() }
  socket.on('data', (chunk: Buffer) => { received = Buffer.concat([received, chunk]); wake() })
  socket.once('close', () => { closed = true; wake() })
  return {
    get received () { return received },
    get closed () { return closed },
    async until (done: (bytes: Buffer) => boolean): Promise<Buffer> {
      while (!done(received) && !closed) await new Promise<void>((resolve) => waiters.push(resolve))
      return received
    }
  }
}

function handshake (path: string, target: string, key: string): string {
  return [`GET ${path} HTTP/1.1`, `Host: ${target}`, 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${key}`, 'X-Client: 1'].join('\r\n') + '\r\n\r\n'
}

test('a WebSocket upgrade inside an intercepted tunnel is relayed: 101 with the origin\'s accept key, frames echoed both ways, a frame sent with the handshake reaches the origin only after its 101, half-close carried', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startWebSocketOrigin(t, pki)
  const hooked: unknown[] = []
  const proxy = await startInterceptingProxy(t, pki, {
    interception: interceptAll(pki),
    setup (app) {
      app.addHook('onRequest', async (request) => {
        if (request.interception === null) return
        hooked.push(request.url)
        request.headers['x-tenant'] = 'blue'
      })
    }
  })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const client = collector(socket)
  const key = randomBytes(16).toString('base64')
  socket.write(Buffer.concat([Buffer.from(handshake('/chat?room=1', target, key)), textFrame('early', true)]))

  const head = (await client.until((bytes) => bytes.includes('\r\n\r\n'))).toString('latin1')
  t.match(head, /^HTTP\/1\.1 101 Switching Protocols\r\n/)
  t.match(head, new RegExp(`sec-websocket-accept: ${acceptKey(key).replace(/[+/=]/g, '\\$&')}\r\n`, 'i'))
  t.match(head, /\r\nconnection: upgrade\r\n/i)
  t.match(head, /\r\nupgrade: websocket\r\n/i)
  t.match(head, /\r\nvia: 1\.1 fastify-forward-proxy\r\n/i)
  t.match(head, /\r\nx-origin: ws\r\n/i)

  const seen = origin.upgrades[0]
  t.equal(seen?.url, '/chat?room=1')
  t.equal(seen?.earlyBytes, 0, 'the frame sent with the handshake was held until the 101')
  t.equal(seen?.headers['sec-websocket-key'], key)
  t.equal(seen?.headers['x-tenant'], 'blue', 'the app hook saw the upgrade request and edited it')
  t.equal(seen?.headers.host, target)
  t.same(hooked, ['/chat?room=1'])

  const framesAfter = (bytes: Buffer): string[] => readFrames(bytes.subarray(bytes.indexOf('\r\n\r\n') + 4))
  await client.until((bytes) => framesAfter(bytes).length >= 1)
  socket.write(textFrame('hello', true))
  await client.until((bytes) => framesAfter(bytes).length >= 2)
  t.same(framesAfter(client.received), ['early', 'hello'], 'echoed in order')

  socket.end()
  await client.until((bytes) => framesAfter(bytes).includes('bye'))
  t.same(framesAfter(client.received), ['early', 'hello', 'bye'], 'the origin\'s last frame after the client\'s half-close still arrives')
  await client.until(() => false)
  t.ok(client.closed)
})

test('an upgrade answered 426 is relayed as an ordinary response, no raw relay, frames sent before it never forwarded, the connection closed after it', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startWebSocketOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const client = collector(socket)
  socket.write(Buffer.concat([Buffer.from(handshake('/426', target, randomBytes(16).toString('base64'))), textFrame('must not pass', true)]))
  const text = (await client.until(() => false)).toString('latin1')
  t.match(text, /^HTTP\/1\.1 426 Upgrade Required\r\n/)
  t.match(text, /\r\nconnection: close\r\n/i)
  t.notMatch(text, /\r\nupgrade:/i, 'Upgrade is hop-by-hop on an ordinary response')
  t.match(text, /\r\n\r\nnot upgrading$/)
  t.equal(origin.upgrades[0]?.earlyBytes, 0)
  t.equal(origin.upgrades.length, 1)
})

test('transforms edit the upgrade request and the 101 head; the destination certificate check applies (an untrusted origin gets 502 tls_certificate_error, nothing relayed)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startWebSocketOrigin(t, pki, 0)
  const target = `127.0.0.1:${origin.port}`
  const transform = {
    transformRequest (_request: unknown, _destination: unknown, outgoing: { headers: Record<string, string | string[]> }) { outgoing.headers['x-injected'] = 'by transform' },
    transformResponse (_request: unknown, _destination: unknown, response: { headers: Record<string, string | string[]> }) { response.headers['x-transformed'] = 'yes' }
  }
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true }, transforms: [transform] }
  })
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const client = collector(socket)
  socket.write(handshake('/t', target, randomBytes(16).toString('base64')))
  const head = (await client.until((bytes) => bytes.includes('\r\n\r\n'))).toString('latin1')
  t.match(head, /^HTTP\/1\.1 101 /)
  t.match(head, /\r\nx-transformed: yes\r\n/i)
  t.match(head, /\r\nupgrade: websocket\r\n/i)
  t.equal(origin.upgrades[0]?.headers['x-injected'], 'by transform')
  t.equal(origin.upgrades[0]?.headers.upgrade, 'websocket')

  const untrusting = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true }, trustedDestinationCa: pki.operatorCa.cert }
  })
  const refused = await openInterceptedTls(t, untrusting.port, target, { ca: pki.operatorCa.cert })
  const refusedClient = collector(refused)
  refused.write(handshake('/untrusted', target, randomBytes(16).toString('base64')))
  const text = (await refusedClient.until(() => false)).toString('latin1')
  t.match(text, /^HTTP\/1\.1 502 /)
  t.match(text, /proxy-status: fastify-forward-proxy; error=tls_certificate_error/i)
  t.equal(origin.upgrades.length, 1, 'the untrusted origin never got the upgrade request')
})
