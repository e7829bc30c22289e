import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a rejected CONNECT (407) with a request appended is answered, closed, and the appended bytes are never parsed', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const smuggled = `GET http://127.0.0.1:${origin.port}/smuggled HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\n\r\n`
  const res = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\n${smuggled}`)
  t.equal(res.status, 407)
  t.equal(res.text.match(/HTTP\/1\.1 /g)?.length, 1, 'exactly one response: the appended request got none')
  await expectNothingDialedBefore(t, origin.accepts, 'the appended request never reached the origin')
})
