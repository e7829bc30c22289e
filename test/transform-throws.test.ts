import { test } from 'tap'
import { request } from 'undici'
import { startProxy, startSentinel } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a request transform that throws gets 500 proxy_internal_error, nothing reaches the destination, and the error is logged server-side only', async (t) => {
  const sentinel = await startSentinel(t)
  const logs: string[] = []
  const proxy = await startProxy(t, {
    transforms: [{ transformRequest () { throw new Error('vault unreachable: token=s3cr3t') } }]
  }, undefined, { logger: { level: 'error', stream: { write: (line: string) => { logs.push(line) } } } })
  const res = await request(`http://127.0.0.1:${sentinel.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
  t.equal(res.statusCode, 500)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=proxy_internal_error; details="request transform threw"')
  const body = await res.body.text()
  t.notMatch(body, /vault|s3cr3t|\n\s+at /)
  await expectNothingDialedBefore(t, sentinel.accepts, 'no connection to the destination')
  t.ok(logs.some((line) => line.includes('proxy_internal_error')), 'logged')
})
