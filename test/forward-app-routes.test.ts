import { test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

function addHealthz (app: FastifyInstance): void {
  app.get('/healthz', async () => ({ served: 'by-app' }))
}

test('an absolute-form request whose path equals an app route is forwarded, not served locally', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {}, addHealthz)
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  t.notMatch(res.text, /by-app/)
  t.match(res.text, /"url":"\/healthz"/)
  t.equal(origin.requests.length, 1)
})

test('origin-form GET /healthz is served by the app on the proxy port', async (t) => {
  const proxy = await startProxy(t, {}, addHealthz)
  const res = await rawExchange(proxy.port, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
  t.equal(res.status, 200)
  t.match(res.text, /\{"served":"by-app"\}$/)
})

test('an origin-form request is routed by the app (404) and never proxied by its Host', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {}, addHealthz)
  for (const host of ['10.0.0.5', `127.0.0.1:${sentinel.port}`]) {
    const res = await rawExchange(proxy.port, `GET /internal HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
    t.equal(res.status, 404, `Host: ${host} gets the app's 404`)
    t.notMatch(res.text, /proxy-status/i)
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed by Host')
})
