import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'

test('SPEC 5.3: a tunnel is authorized once; requests inside it are not asked for credentials and reach the destination untouched', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const res = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\n\r\nGET http://elsewhere.example/inside HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
  t.match(res.text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
  t.equal(origin.requests[0]?.url, 'http://elsewhere.example/inside', 'the bytes inside were relayed, not interpreted by the proxy')
})
