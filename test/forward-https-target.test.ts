import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('an absolute-form https:// target gets 400 with Proxy-Status, destination not contacted', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t)
  for (const scheme of ['https', 'HTTPS']) {
    const res = await rawExchange(proxy.port, `GET ${scheme}://127.0.0.1:${sentinel.port}/secret HTTP/1.1\r\nHost: 127.0.0.1:${sentinel.port}\r\nConnection: close\r\n\r\n`)
    t.equal(res.status, 400, `${scheme}:// refused`)
    t.match(res.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error/i)
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'the destination was never contacted')
})
