import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'

test('CONNECT early data: bytes sent with the CONNECT head reach the destination after the 200', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\nGET /early HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
  t.match(res.text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
  t.equal(origin.requests[0]?.url, '/early')
})

test('HOSTILE 10: a rejected CONNECT (407) with a request appended is answered, closed, and the appended bytes are never parsed', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const smuggled = `GET http://127.0.0.1:${origin.port}/smuggled HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\n\r\n`
  const res = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\n${smuggled}`)
  t.equal(res.status, 407)
  t.equal(res.text.match(/HTTP\/1\.1 /g)?.length, 1, 'exactly one response: the appended request got none')
  t.equal(origin.requests.length, 0, 'the appended request never reached the origin')
})

test('HOSTILE 10: a CONNECT refused by policy (403) with a ClientHello-like payload appended closes without parsing it', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { destinations: { allowedPorts: [443] } })
  const res = await rawExchange(proxy.port, Buffer.concat([
    Buffer.from(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\n`),
    Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00])
  ]))
  t.equal(res.status, 403)
  t.equal(res.text.match(/HTTP\/1\.1 /g)?.length, 1)
  t.equal(origin.requests.length, 0)
})

test('SPEC 5.3: a tunnel is authorized once; requests inside it are not asked for credentials and reach the destination untouched', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const res = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\n\r\nGET http://elsewhere.example/inside HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
  t.match(res.text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
  t.equal(origin.requests[0]?.url, 'http://elsewhere.example/inside', 'the bytes inside were relayed, not interpreted by the proxy')
})
