import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a CONNECT refused by policy (403) with a ClientHello-like payload appended closes without parsing it', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { destinations: { allowedPorts: [443] } })
  const res = await rawExchange(proxy.port, Buffer.concat([
    Buffer.from(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\n`),
    Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00])
  ]))
  t.equal(res.status, 403)
  t.equal(res.text.match(/HTTP\/1\.1 /g)?.length, 1)
  await expectNothingDialedBefore(t, origin.accepts, 'the refused CONNECT target was never dialed')
})
