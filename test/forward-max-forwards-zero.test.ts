import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

function head (method: string, port: number, maxForwards: string): string {
  return `${method} http://127.0.0.1:${port}/mf HTTP/1.1\r\nHost: x\r\nMax-Forwards: ${maxForwards}\r\nConnection: close\r\n\r\n`
}

test('OPTIONS with Max-Forwards 0 gets an empty 200 from the proxy, destination not contacted', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, head('OPTIONS', sentinel.port, '0'))
  t.equal(res.status, 200)
  t.match(res.text, /\r\ncontent-length: 0\r\n/i)
  t.ok(res.text.endsWith('\r\n\r\n'), 'empty body')
  await expectNothingDialedBefore(t, sentinel.accepts, 'the destination was never contacted')
})

test('TRACE with Max-Forwards 0 gets 405 without echo, destination not contacted', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `TRACE http://127.0.0.1:${sentinel.port}/mf HTTP/1.1\r\nHost: x\r\nMax-Forwards: 0\r\nX-Echo-Me: canary-7f3\r\nCookie: session=canary-9a1\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 405)
  t.match(res.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_denied/i)
  t.notOk(res.text.includes('canary'), 'nothing of the request is echoed')
  t.notMatch(res.text, /message\/http/i)
  await expectNothingDialedBefore(t, sentinel.accepts, 'the destination was never contacted')
})

test('Max-Forwards 00 is a valid zero too', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t)
  t.equal((await rawExchange(proxy.port, head('TRACE', sentinel.port, '00'))).status, 405)
  t.equal((await rawExchange(proxy.port, head('OPTIONS', sentinel.port, '00'))).status, 200)
  await expectNothingDialedBefore(t, sentinel.accepts, 'the destination was never contacted')
})
