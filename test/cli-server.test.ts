import { test, type Test } from 'tap'
import { execFile } from 'node:child_process'
import { connect as tlsConnect } from 'node:tls'
import { promisify } from 'node:util'
import { request } from 'undici'
import { parseConfig } from '../lib/cli/config'
import { startProxyServer, type RunningProxyServer } from '../lib/cli/build-server'
import { startOrigin } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'

const curl = promisify(execFile)

async function start (t: Test, value: object, dir = '/'): Promise<RunningProxyServer> {
  const server = await startProxyServer(parseConfig({ log: { level: 'silent' }, ...value }, 'test.json', dir))
  t.teardown(() => server.close())
  return server
}

const portOf = (url: string): number => Number(new URL(url).port)

test('server: GET /healthz answers 200 on the proxy port', async (t) => {
  const server = await start(t, { listen: [{ host: '127.0.0.1', port: 0 }] })
  const res = await request(`${server.urls[0] ?? ''}/healthz`)
  t.equal(res.statusCode, 200)
  t.same(await res.body.json(), { status: 'ok' })
})

test('server: curl -x with the configured user reaches a loopback origin; without credentials it gets 407', async (t) => {
  const origin = await startOrigin(t)
  const server = await start(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { alice: 's3cret' },
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' }
  })
  const port = portOf(server.urls[0] ?? '')
  const ok = await curl('curl', ['-sS', '-x', `http://alice:s3cret@127.0.0.1:${port}`, `http://127.0.0.1:${origin.port}/through`])
  t.match(ok.stdout, /"url":"\/through"/)
  const tunnelled = await curl('curl', ['-sS', '-p', '-x', `http://alice:s3cret@127.0.0.1:${port}`, `http://127.0.0.1:${origin.port}/tunnel`])
  t.match(tunnelled.stdout, /"url":"\/tunnel"/)
  const refused = await curl('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-x', `http://127.0.0.1:${port}`, `http://127.0.0.1:${origin.port}/`])
  t.equal(refused.stdout, '407')
  t.equal(origin.requests.length, 2, 'the refused request never reached the origin')
})

test('server: a second plain listener and a TLS listener serve /healthz and CONNECT', async (t) => {
  const origin = await startOrigin(t)
  const tls = await makeSelfSignedCertificate(t.testdir())
  const server = await start(t, {
    listen: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0, tls: { cert: tls.certPath, key: tls.keyPath } }],
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' }
  })
  t.equal(server.urls.length, 3)
  t.match(server.urls[2], /^https:\/\/127\.0\.0\.1:\d+$/)
  const second = await rawExchange(portOf(server.urls[1] ?? ''), 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  t.equal(second.status, 200)
  const viaSecond = await rawExchange(portOf(server.urls[1] ?? ''), `CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
  t.match(viaSecond.text, /^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK/)
  t.match(viaSecond.text, /"url":"\/second"/)

  const tlsText = await new Promise<string>((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: portOf(server.urls[2] ?? ''), ca: tls.cert, servername: undefined }, () => {
      socket.write(`CONNECT 127.0.0.1:${origin.port} HTTP/1.1\r\nHost: x\r\n\r\nGET /over-tls HTTP/1.1\r\nHost: o\r\nConnection: close\r\n\r\n`)
    })
    let text = ''
    socket.on('data', (chunk: Buffer) => { text += chunk.toString() })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
  })
  t.match(tlsText, /^HTTP\/1\.1 200 Connection Established/)
  t.match(tlsText, /"url":"\/over-tls"/)
})

test('server: a request Node cannot parse gets 400 with Proxy-Status and is never forwarded', async (t) => {
  const origin = await startOrigin(t)
  const server = await start(t, { listen: [{ host: '127.0.0.1', port: 0 }], destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' } })
  const res = await rawExchange(portOf(server.urls[0] ?? ''), `POST http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n`)
  t.equal(res.status, 400)
  t.match(res.text, /Proxy-Status: fastify-forward-proxy; error=http_request_error/)
  t.equal(origin.requests.length, 0)
})

test('server: an invalid destination option in the file stops start-up with the option named', async (t) => {
  await t.rejects(startProxyServer(parseConfig({ log: { level: 'silent' }, listen: [{ port: 0 }], destinations: { allowedNetworks: ['10.0.0.0/99'] } }, 'p', '/')),
    { message: /option "destinations\.allowedNetworks\[0\]" is not a CIDR range/ })
})
