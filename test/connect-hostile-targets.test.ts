import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('malformed CONNECT targets get 400 and are never dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t)
  const p = sentinel.port
  const targets = ['127.0.0.1', '127.0.0.1:0', '127.0.0.1:65536', `user@127.0.0.1:${p}`, `http://127.0.0.1:${p}`, `127.0.0.1:${p}/path`,
    `ex%61mple.com:${p}`, `127.0.0.1:+${p}`, `[::1:${p}`, `:${p}`, '*']
  for (const target of targets) {
    const res = await rawExchange(proxy.port, `CONNECT ${target} HTTP/1.1\r\nHost: x\r\n\r\n`)
    t.ok(res.status === 400, `CONNECT ${target}: ${res.status}`)
  }
  const nonAscii = await rawExchange(proxy.port, Buffer.concat([Buffer.from('CONNECT b'), Buffer.from([0xc3, 0xbc]), Buffer.from(`cher.example:${p} HTTP/1.1\r\nHost: x\r\n\r\n`)]))
  t.equal(nonAscii.status, 400, 'non-ASCII bytes in the target')
  const withBody = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${p} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello`)
  t.equal(withBody.status, 400, 'a CONNECT with a body')
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})
