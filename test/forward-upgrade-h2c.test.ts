import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'

test('Upgrade: h2c on a forwarded request is stripped and never switches protocols', async (t) => {
  const origin = await startOrigin(t)
  let upgrades = 0
  // An origin that would switch protocols if the upgrade reached it.
  origin.server.on('upgrade', (_req, socket) => {
    upgrades++
    socket.end('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n')
  })
  const proxy = await startProxy(t)
  const head = [
    `GET http://127.0.0.1:${origin.port}/h2c HTTP/1.1`,
    `Host: 127.0.0.1:${origin.port}`,
    'Connection: Upgrade, HTTP2-Settings, close',
    'Upgrade: h2c',
    'HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA'
  ]
  const res = await rawExchange(proxy.port, `${head.join('\r\n')}\r\n\r\n`)
  t.equal(res.status, 200, 'an ordinary response, not 101')
  t.notMatch(res.text, /101 Switching/)
  t.equal(upgrades, 0, 'the origin never saw an upgrade')
  const seen = origin.requests[0]
  t.equal(seen?.headers.upgrade, undefined)
  t.equal(seen?.headers['http2-settings'], undefined)
  t.equal(seen?.headers.connection, 'keep-alive', 'Connection is the proxy\'s own')
})

test('a WebSocket handshake sent as an absolute-form http:// request gets 501 with Proxy-Status (use a CONNECT tunnel), nothing dialed, instead of reaching the destination as a plain GET; logged as a refusal of the request', async (t) => {
  const origin = await startOrigin(t)
  const log = capturedLog()
  const proxy = await startProxy(t, {}, undefined, { logger: log.logger })
  const head = [
    `GET http://127.0.0.1:${origin.port}/ws HTTP/1.1`,
    `Host: 127.0.0.1:${origin.port}`,
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='
  ]
  const res = await rawExchange(proxy.port, `${head.join('\r\n')}\r\n\r\n`, 5000)
  t.equal(res.status, 501)
  t.match(res.text, /proxy-status: fastify-forward-proxy; error=http_request_error; details="WebSocket over http:\/\/ forwarding"/i)
  t.match(res.text, /CONNECT tunnel/)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was dialed')
  await eventually(() => log.access().length === 1)
  t.match(log.access()[0], { status: 501, decision: 'deny', rule: 'request', errorType: 'http_request_error' })
})
