import { test } from 'tap'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const AUTH = { auth: { users: { alice: 's3cret' } } }
const CHALLENGE = /proxy-authenticate: Basic realm="fastify-forward-proxy", charset="UTF-8"/i

test('CONNECT without credentials gets 407 with Proxy-Authenticate, before any connect', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, AUTH)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`)
  t.equal(tunnel.status, 407)
  t.match(tunnel.head, CHALLENGE)
  t.match(tunnel.head, /proxy-status: fastify-forward-proxy; error=http_request_denied/i)
  tunnel.socket.destroy()
  await expectNothingDialedBefore(t, sentinel.accepts, 'the destination was never dialed')
})

test('an http:// request without credentials gets 407 and is not forwarded', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, AUTH)
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 407)
  t.match(res.text, CHALLENGE)
  await expectNothingDialedBefore(t, origin.accepts, 'the origin was never dialed')
})

test('valid credentials open a tunnel', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, AUTH)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`, { 'Proxy-Authorization': basic('alice', 's3cret') })
  t.equal(tunnel.status, 200)
  tunnel.socket.destroy()
})

test('malformed or wrong credentials get 407 (or the parser\'s 4xx), never 500, and the server keeps serving', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, AUTH)
  const attempts: Record<string, string> = {
    'wrong password': basic('alice', 'wrong'),
    'unknown user': basic('mallory', 's3cret'),
    'empty password': basic('alice', ''),
    'invalid base64': 'Basic !!!not-base64!!!',
    'no colon': `Basic ${Buffer.from('alices3cret').toString('base64')}`,
    'Bearer scheme': 'Bearer s3cret',
    'scheme only': 'Basic',
    'control characters': `Basic ${Buffer.from('alice:s3\u0000cret').toString('base64')}`,
    '60 KB token': `Basic ${'A'.repeat(60 * 1024)}`
  }
  for (const [name, value] of Object.entries(attempts)) {
    const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${value}\r\nConnection: close\r\n\r\n`)
    t.ok(res.status === 407 || res.status === 431 || res.status === 400, `${name}: ${res.status}`)
    t.not(res.status, 500, name)
  }
  const duplicated = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('mallory', 'x')}\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\nConnection: close\r\n\r\n`)
  t.equal(duplicated.status, 407, 'a duplicated header is never merged into a pass')
  // Valid credentials first, and anything after them: another user's, a wrong password, another scheme.
  for (const second of [basic('alice', 'wrong'), basic('bob', 'b0b'), 'Bearer xyz', basic('alice', 's3cret')]) {
    const repeated = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\nproxy-authorization: ${second}\r\nConnection: close\r\n\r\n`)
    t.equal(repeated.status, 407, `valid credentials followed by ${second.split(' ')[0] ?? ''} ...: refused, not judged by the first alone`)
    t.match(repeated.text, /proxy-status: fastify-forward-proxy; error=http_request_denied/i)
  }
  const connectRepeated = await rawExchange(proxy.port, `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\nProxy-Authorization: Bearer xyz\r\n\r\n`)
  t.equal(connectRepeated.status, 407, 'a CONNECT too')
  // The accepted request is the probe: the first connection the origin got must be its.
  let ok = { status: 0 }
  await expectNothingDialedBefore(t, origin.accepts, 'no refused request reached the origin', {
    send: async (marker) => { ok = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/${marker} HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\nConnection: close\r\n\r\n`) }
  })
  t.equal(ok.status, 200, 'still serving after the hostile attempts')
  for (const spelling of [`basic ${Buffer.from('alice:s3cret').toString('base64')}`, `Basic   ${Buffer.from('alice:s3cret').toString('base64')}`]) {
    const accepted = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${spelling}\r\nConnection: close\r\n\r\n`)
    t.equal(accepted.status, 200, `${spelling.slice(0, 8)}...: the scheme in any case, one or more spaces after it (RFC 9110)`)
  }
})
