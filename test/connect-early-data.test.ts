import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

test('CONNECT early data: bytes sent with the CONNECT head reach the destination after the 200', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\nGET /early HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
  t.match(res.text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
  t.equal(origin.requests[0]?.url, '/early')
})
