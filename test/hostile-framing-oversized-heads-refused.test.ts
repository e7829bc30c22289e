import { test } from 'tap'
import { proxyClientErrorHandler } from '../lib'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const REFUSED = /\r\nproxy-status: fastify-forward-proxy; error=http_request_error(; details="[^"]*")?\r\n/i
const SERVER = { clientErrorHandler: proxyClientErrorHandler }

/** `count` distinct, empty header lines. */
const tinyHeaders = (count: number): string => Array.from({ length: count }, (_, index) => `h${index}:\r\n`).join('')

test('a request target over 8 KiB gets 414 http_request_error; one just under is forwarded', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {}, undefined, SERVER)
  const prefix = `http://127.0.0.1:${origin.port}/`
  const long = await rawExchange(proxy.port, `GET ${prefix}${'a'.repeat(8193 - prefix.length)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(long.status, 414)
  t.match(long.text, /details="request target too long"/)
  await expectNothingDialedBefore(t, origin.accepts, 'not forwarded')
  const fits = await rawExchange(proxy.port, `GET ${prefix}${'a'.repeat(8192 - prefix.length)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(fits.status, 200)
})

test('a head over the 16 KiB limit (one long line or one huge header) gets 431 http_request_error and the connection closes; nothing forwarded', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {}, undefined, SERVER)
  for (const [name, request] of [
    ['request line of 17 KB', `GET http://127.0.0.1:${origin.port}/${'a'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['header of 20 KB', `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`]
  ] as const) {
    const refused = await rawExchange(proxy.port, request)
    t.equal(refused.status, 431, name)
    t.match(refused.text, REFUSED, `${name}: Proxy-Status`)
  }
  await expectNothingDialedBefore(t, origin.accepts, 'nothing forwarded')
})

test('10,000 tiny headers get 431 http_request_error (too many header fields), never forwarded with the rest dropped', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {}, undefined, SERVER)
  const refused = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\n${'a:\r\n'.repeat(10_000)}Connection: close\r\n\r\n`)
  t.equal(refused.status, 431)
  // Node 20 passes such a head on with the lines past server.maxHeadersCount dropped, and the
  // proxy refuses it ("too many header fields"). Recent Node 22 and 24 releases refuse it in
  // their HTTP parser instead (HPE_HEADER_OVERFLOW once a head passes 1,000 lines by default),
  // before the proxy sees the request, and the proxy's clientErrorHandler answers with that
  // code. Either way: 431 with the proxy's Proxy-Status, and nothing reaches the origin.
  t.match(refused.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="(too many header fields|HPE_HEADER_OVERFLOW)"\r\n/i)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing forwarded')
})

test('Past the header count: Transfer-Encoding or Content-Length after 1,100 headers (which Node drops while framing by them) gets 431; no body-less request reaches the origin', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {}, undefined, SERVER)
  for (const framing of ['Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n', 'Content-Length: 5\r\nConnection: close\r\n\r\nhello']) {
    const refused = await rawExchange(proxy.port, `POST http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\n${tinyHeaders(1100)}${framing}`)
    t.equal(refused.status, 431, framing.split(':')[0] ?? '')
    t.match(refused.text, REFUSED)
  }
  await expectNothingDialedBefore(t, origin.accepts, 'no body-less request reached the origin')
  const ordinary = await rawExchange(proxy.port, `POST http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\n${tinyHeaders(900)}Content-Length: 5\r\nConnection: close\r\n\r\nhello`)
  t.equal(ordinary.status, 200, '900 headers are still served')
  t.equal(origin.requests[0]?.body, 'hello')
})

test('a CONNECT with 1,100 headers gets 431 and is never dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, undefined, SERVER)
  const refused = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n${tinyHeaders(1100)}\r\n`)
  t.equal(refused.status, 431)
  t.match(refused.text, REFUSED)
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})
