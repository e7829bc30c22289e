import { test } from 'tap'
import { connect } from 'node:net'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { within } from './helpers/within'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a CONNECT as the first request gets 200 and relays bytes both ways', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  t.equal(tunnel.head, 'HTTP/1.1 200 Connection Established')
  tunnel.socket.end('POST /echo HTTP/1.1\r\nHost: o\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello')
  const reply = await within(new Promise<string>((resolve) => { let text = ''; tunnel.socket.on('data', (c: Buffer) => { text += c.toString() }); tunnel.socket.on('close', () => resolve(text)) }), 'the origin\'s reply through the tunnel')
  t.match(reply, /"method":"POST"/)
  t.match(reply, /"body":"hello"/)
})

test('a CONNECT after another request on a keep-alive connection gets 501 and the connection closes', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, (app) => { app.get('/first', async () => 'first') })
  const socket = connect(proxy.port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  let text = ''
  socket.on('data', (chunk: Buffer) => { text += chunk.toString() })
  socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\n')
  await within(new Promise<void>((resolve) => { const check = (): void => { if (text.includes('first')) { socket.off('data', check); resolve() } }; socket.on('data', check) }), 'the answer to GET /first')
  socket.write(`CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
  await within(new Promise<void>((resolve) => socket.on('close', () => resolve())), 'the close after the 501')
  const second = text.slice(text.indexOf('first') + 'first'.length)
  t.match(second, /^HTTP\/1\.1 501 Not Implemented\r\n/)
  t.match(second, /Proxy-Status: fastify-forward-proxy; error=http_request_error/)
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})
