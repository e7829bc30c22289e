import { test } from 'tap'
import { Writable } from 'node:stream'
import { proxyClientErrorHandler } from '../lib'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { connectHttp2, openHttp2Tunnel, startHttp2Proxy, type Http2Tunnel } from './helpers/http2-proxy'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const PASSWORD = 'pässwörd-Sëcret'
const USERS = { alice: PASSWORD }
const base64 = (bytes: Buffer): string => bytes.toString('base64')

/** Hostile Proxy-Authorization values (as latin1 bytes on the wire), each with the secrets it carries. */
const ATTEMPTS: ReadonlyArray<{ name: string, value: string, secrets: string[] }> = [
  // The right password, but encoded as ISO-8859-1 rather than UTF-8: not the same credentials.
  { name: 'password in Latin-1, not UTF-8', value: `Basic ${base64(Buffer.from(`alice:${PASSWORD}`, 'latin1'))}`, secrets: [PASSWORD, base64(Buffer.from(`alice:${PASSWORD}`, 'latin1'))] },
  { name: 'invalid UTF-8 bytes', value: `Basic ${base64(Buffer.from([0x61, 0x6c, 0x69, 0x63, 0x65, 0x3a, 0xc3, 0x28, 0xff, 0xfe, 0x80]))}`, secrets: [base64(Buffer.from([0x61, 0x6c, 0x69, 0x63, 0x65, 0x3a, 0xc3, 0x28, 0xff, 0xfe, 0x80]))] },
  { name: 'raw bytes 0x80-0xff in the header value', value: 'Basic \u00ff\u00fe\u00c3\u0028secret-raw-bytes', secrets: ['secret-raw-bytes'] },
  { name: 'NUL in the decoded password', value: `Basic ${base64(Buffer.from('alice:nul\u0000secret-after-nul'))}`, secrets: ['secret-after-nul', base64(Buffer.from('alice:nul\u0000secret-after-nul'))] },
  { name: '12 KB token under the head limit', value: `Basic ${base64(Buffer.from(`alice:${'x'.repeat(9000)}secret-long`))}`, secrets: ['secret-long', base64(Buffer.from(`alice:${'x'.repeat(9000)}secret-long`)).slice(-40)] },
  { name: 'lower-case scheme, extra spaces', value: `basic    ${base64(Buffer.from('alice:secret-spaced'))}   `, secrets: ['secret-spaced'] },
  { name: 'Digest scheme', value: 'Digest username="alice", response="secret-digest"', secrets: ['secret-digest'] }
]

function collectingLogger (): { lines: string[], stream: Writable } {
  const lines: string[] = []
  return { lines, stream: new Writable({ write (chunk: Buffer, _encoding, callback) { lines.push(chunk.toString()); callback() } }) }
}

test('non-UTF-8, raw 8-bit, NUL-carrying and long credentials get 407 (or 400) with Proxy-Status over http:// and CONNECT; nothing forwarded or dialed; no credential in any response or log line', async (t) => {
  const origin = await startOrigin(t)
  const sentinel = await startSentinel(t)
  const log = collectingLogger()
  const proxy = await startProxy(t, { auth: { users: USERS, failureLimit: false } }, undefined, { logger: { level: 'trace', stream: log.stream }, clientErrorHandler: proxyClientErrorHandler })
  const responses: string[] = []
  for (const { name, value } of ATTEMPTS) {
    const header = Buffer.from(`Proxy-Authorization: ${value}\r\n`, 'latin1')
    for (const head of [`GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\n`, `CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n`]) {
      const reply = await rawExchange(proxy.port, Buffer.concat([Buffer.from(head), header, Buffer.from('Connection: close\r\n\r\n')]))
      const kind = head.slice(0, head.indexOf(' '))
      t.ok(reply.status === 407 || reply.status === 400, `${name} (${kind}): ${reply.status}`)
      t.match(reply.text, /\r\nproxy-status: fastify-forward-proxy; error=(http_request_denied|http_request_error)/i, `${name} (${kind}): Proxy-Status`)
      responses.push(reply.text)
    }
  }
  await expectNothingDialedBefore(t, origin.accepts, 'nothing forwarded')
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed')
  await proxy.app.close()
  const everything = responses.join('\n') + log.lines.join('')
  t.ok(log.lines.length > ATTEMPTS.length, 'the proxy did log the attempts')
  for (const { name, secrets } of ATTEMPTS) {
    for (const secret of secrets) t.notOk(everything.toLowerCase().includes(secret.toLowerCase()), `${name}: never echoed nor logged`)
  }
  t.notOk(everything.includes(PASSWORD), 'the configured password appears nowhere')
})

test('over HTTP/2: a CONNECT stream with Latin-1 or invalid UTF-8 credentials gets 407 with Proxy-Status, the destination is not dialed and the session goes on', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startHttp2Proxy(t, { auth: { users: USERS, failureLimit: false } })
  const session = await connectHttp2(t, proxy)
  for (const { name, value } of ATTEMPTS.slice(0, 2)) {
    const refused = await openHttp2Tunnel(session, `127.0.0.1:${sentinel.port}`, { 'proxy-authorization': value })
    t.equal(refused.status, 407, name)
    t.match(refused.headers['proxy-status'], /error=http_request_denied/, name)
    t.notOk(JSON.stringify(refused.headers).includes(value.slice(6)), `${name}: not echoed`)
    t.notOk((await refused.body()).includes(value.slice(6)), `${name}: not in the body`)
  }
  // The tunnel the right password opens is the probe: the first connection the destination got must be its.
  let right: Http2Tunnel | undefined
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed', {
    send: async (marker) => {
      right = await openHttp2Tunnel(session, `127.0.0.1:${sentinel.port}`, { 'proxy-authorization': `Basic ${base64(Buffer.from(`alice:${PASSWORD}`))}` })
      t.equal(right.status, 200, 'the UTF-8 password opens the tunnel on the same session')
      right.stream.write(marker)
    }
  })
  right?.stream.close()
})
