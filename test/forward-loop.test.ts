import { test } from 'tap'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a request whose Via already lists this proxy gets 508 proxy_loop_detected, not forwarded', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t)
  for (const via of ['1.1 fastify-forward-proxy', '1.0 edge, 1.1 FASTIFY-FORWARD-PROXY (Node)', 'HTTP/1.1 fastify-forward-proxy']) {
    const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${sentinel.port}/ HTTP/1.1\r\nHost: x\r\nVia: ${via}\r\nConnection: close\r\n\r\n`)
    t.equal(res.status, 508, `Via: ${via}`)
    t.match(res.text, /\r\nproxy-status: fastify-forward-proxy; error=proxy_loop_detected/i)
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'no looping request was forwarded')
})

test('the loop check honours a configured pseudonym and ignores other proxies', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { via: 'edge-7' })
  const looped = await rawExchange(proxy.port, `GET http://127.0.0.1:${sentinel.port}/ HTTP/1.1\r\nHost: x\r\nVia: 1.1 edge-7\r\nConnection: close\r\n\r\n`)
  t.equal(looped.status, 508)
  t.match(looped.text, /\r\nproxy-status: edge-7; error=proxy_loop_detected/i)
  await expectNothingDialedBefore(t, sentinel.accepts, 'the looping request was not forwarded')

  const origin = await startOrigin(t)
  const passed = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nVia: 1.1 fastify-forward-proxy, 1.1 other (edge-7)\r\nConnection: close\r\n\r\n`)
  t.equal(passed.status, 200, 'another proxy\'s pseudonym, or ours in a comment, is no loop')
  t.equal(origin.requests[0]?.headers.via, '1.1 fastify-forward-proxy, 1.1 other (edge-7), 1.1 edge-7')
})
