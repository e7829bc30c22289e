// The done-when run of traffic capture: the bundled server with `capture` on, driven with
// http://, intercepted HTTP/1.1 and HTTP/2, server-sent events and a WebSocket handshake, leaves a
// HAR file that har-validator accepts and har-to-k6 converts, one entry per request, with no
// secret value and no proxy credential anywhere in its bytes.
import { test } from 'tap'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { interceptionConfig, makeInterceptionPki } from './helpers/interception-pki'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { eventually } from './helpers/eventually'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { startOrigin } from './helpers/servers'
import { http2OverTls, http2Request, openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { basic, rawExchange } from './helpers/raw-client'
import { acceptKey, startWebSocketOrigin } from './helpers/websocket-origin'
import type { ForwardProxyCaptureEntry } from '../lib/index'
import { harValidationErrors } from './helpers/har-validator'
import { defaultPlaceholder as defaultPlaceholderOf } from './helpers/internals'

const SECRET = 'sk-capture-e2e-7d1f0b9c3a'
const PASSWORD = 'agent-password-e2e-91'
const HAR_TO_K6 = join(__dirname, '..', 'node_modules', 'har-to-k6', 'bin', 'har-to-k6.js')

test('bin: with capture on, http://, intercepted HTTP/1.1 and HTTP/2, SSE and a WebSocket handshake leave a valid HAR file, one entry each, with no secret or proxy credential in its bytes', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (req, res) => {
    if (req.url === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: one\n\n')
      res.end('data: two\n\n')
      return
    }
    // Echoes the injected value back: the client and the capture must see the placeholder.
    res.setHeader('content-type', 'application/json')
    res.setHeader('x-echo', String(req.headers['x-api-key']))
    res.end(JSON.stringify({ path: req.url, key: req.headers['x-api-key'] }))
  })
  const websocket = await startWebSocketOrigin(t, pki, 0)
  // Not 127.0.0.1: the header rule (for 127.0.0.1) would put a secret in a plain http:// request.
  const plain = await startOrigin(t, undefined, '127.0.0.2')
  const directory = t.testdir()
  const file = join(directory, 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: { ...LOOPBACK_ORIGINS, allowedNetworks: ['127.0.0.1/32', '127.0.0.2/32'] },
    interception: { ...interceptionConfig(pki, ['127.0.0.1']), clientProtocols: 'http1AndHttp2' },
    users: { agent: PASSWORD },
    secrets: { api: { env: 'FFP_CAPTURE_SECRET', hosts: [`127.0.0.1:${origin.port}`, `127.0.0.1:${websocket.port}`] } },
    headers: [{ hosts: ['127.0.0.1'], set: { 'X-Api-Key': '{{secret:api}}', 'X-Tenant-Token': 'literal-token-in-the-file' } }],
    capture: { file: 'traffic.har' }
  }))
  const bin = runBin(t, ['--config', file], { FFP_CAPTURE_SECRET: SECRET })
  const port = portOf((await listeningUrls(bin))[0])
  const credentials = { 'Proxy-Authorization': basic('agent', PASSWORD) }
  const authority = `127.0.0.1:${origin.port}`

  const forwarded = await rawExchange(port, `GET http://127.0.0.2:${plain.port}/plain?x=1 HTTP/1.1\r\nHost: 127.0.0.2:${plain.port}\r\nProxy-Authorization: ${credentials['Proxy-Authorization']}\r\nConnection: close\r\n\r\n`)
  t.match(forwarded.text, /^HTTP\/1\.1 200 /)

  const h1 = await rawTlsExchange(await openInterceptedTls(t, port, authority, { ca: pki.operatorCa.cert }, credentials), `GET /h1 HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`)
  t.equal(h1.status, 200)
  t.equal(origin.requests[0]?.headers['x-api-key'], SECRET, 'the header rule injected the value')
  t.notOk(h1.head.includes(SECRET) || h1.body.includes(SECRET), 'the client got the placeholder back')

  const h2Socket = await openInterceptedTls(t, port, authority, { ca: pki.operatorCa.cert, alpn: ['h2'] }, credentials)
  t.equal((await http2Request(await http2OverTls(t, h2Socket, authority), { ':path': '/h2' })).status, 200)

  const events = await rawTlsExchange(await openInterceptedTls(t, port, authority, { ca: pki.operatorCa.cert }, credentials), `GET /events HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`)
  t.match(events.body, /data: one\n\n[\s\S]*data: two\n\n/)

  const wsAuthority = `127.0.0.1:${websocket.port}`
  const ws = await openInterceptedTls(t, port, wsAuthority, { ca: pki.operatorCa.cert }, credentials)
  const key = randomBytes(16).toString('base64')
  const switched = new Promise<string>((resolve) => {
    let head = ''
    ws.on('data', (chunk: Buffer) => { head += chunk.toString('latin1'); if (head.includes('\r\n\r\n')) resolve(head) })
  })
  ws.write(`GET /socket HTTP/1.1\r\nHost: ${wsAuthority}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n\r\n`)
  t.match(await switched, new RegExp(`^HTTP/1\\.1 101 [\\s\\S]*sec-websocket-accept: ${acceptKey(key).replace(/[+/=]/g, '\\$&')}`, 'i'))
  const wsClosed = new Promise((resolve) => ws.once('close', resolve))
  ws.end()
  await wsClosed

  // A graceful stop records what has ended and closes the file.
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  const path = join(directory, 'traffic.har')
  t.equal(statSync(path).mode & 0o777, 0o600, 'the capture file is private')
  const bytes = readFileSync(path)
  const har = JSON.parse(bytes.toString()) as { log: { entries: ForwardProxyCaptureEntry[] } }
  t.same(await harValidationErrors(har), [], 'har-validator accepts the file')

  const urls = har.log.entries.map((entry) => entry.request.url).sort()
  t.same(urls, [
    `http://127.0.0.2:${plain.port}/plain?x=1`,
    `https://${authority}/events`,
    `https://${authority}/h1`,
    `https://${authority}/h2`,
    `https://${wsAuthority}/socket`
  ].sort(), 'one entry per request (an intercepted tunnel has none of its own)')
  const byPath = (path: string): ForwardProxyCaptureEntry | undefined => har.log.entries.find((entry) => entry.request.url.endsWith(path))
  t.equal(byPath('/h1')?.request.headers.find((pair) => pair.name.toLowerCase() === 'x-api-key')?.value, defaultPlaceholderOf('api'), 'the header rule\'s value is written as its placeholder')
  t.equal(byPath('/h1')?.request.headers.find((pair) => pair.name.toLowerCase() === 'x-tenant-token')?.value, '[redacted]', 'a value the rule gives itself is redacted, as in the log, though redactHeaders does not name it')
  t.equal(byPath('/h2')?.response.httpVersion, 'HTTP/2.0')
  t.equal(byPath('/events')?.response.content.text, 'data: one\n\ndata: two\n\n')
  t.equal(byPath('/socket')?.response.status, 101)
  t.equal(byPath('/plain?x=1')?._intercepted, false)
  for (const entry of har.log.entries) {
    t.equal(entry._user, 'agent')
    t.ok(entry.timings.wait >= 0 && entry.timings.receive >= 0, `${entry.request.url}: timings present`)
  }

  const text = bytes.toString('latin1')
  t.notOk(text.includes(SECRET), 'no secret value in the file')
  t.notOk(text.includes('literal-token-in-the-file'), 'no value a header rule wrote in the configuration file')
  t.notOk(text.includes(PASSWORD) || text.includes(Buffer.from(`agent:${PASSWORD}`).toString('base64')), 'no proxy credential in the file')
  t.notOk(/proxy-authorization/i.test(text))

  const script = join(directory, 'traffic.js')
  await promisify(execFile)(process.execPath, [HAR_TO_K6, path, '-o', script])
  const k6 = readFileSync(script, 'utf8')
  for (const url of urls) t.ok(k6.includes(url.split('?')[0] as string), `har-to-k6 converted ${url}`)
})

test('bin: capture turns on and off with a live reload of the configuration file', async (t) => {
  const origin = await startOrigin(t)
  const directory = t.testdir()
  const file = join(directory, 'proxy.json')
  // 127.0.0.3 and .4 are reachable loopback addresses nothing listens on (a refused connection, 502) until a file denies them.
  const destinations = { ...LOOPBACK_ORIGINS, allowedNetworks: ['127.0.0.1/32', '127.0.0.3/32', '127.0.0.4/32'] }
  const config = { listen: [{ host: '127.0.0.1', port: 0 }], destinations, users: { agent: PASSWORD } }
  writeFileSync(file, JSON.stringify(config))
  const bin = runBin(t, ['--config', file])
  const port = portOf((await listeningUrls(bin))[0])
  const status = async (url: string): Promise<number> => {
    const answer = await rawExchange(port, `GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nProxy-Authorization: ${basic('agent', PASSWORD)}\r\nConnection: close\r\n\r\n`)
    return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer.text)?.[1] ?? 0)
  }
  // Each new file also denies a host of its own: once that host is refused, the whole file applies.
  const reload = async (next: object, marker: string): Promise<void> => {
    writeFileSync(file, JSON.stringify({ ...next, destinations: { ...destinations, deniedHosts: [marker] } }))
    bin.child.kill('SIGHUP')
    await eventually(async () => await status(`http://${marker}:${origin.port}/`) === 403, 10_000)
  }
  t.equal(await status(`http://127.0.0.1:${origin.port}/before`), 200)
  await reload({ ...config, capture: { file: 'traffic.har' } }, '127.0.0.3')
  t.equal(await status(`http://127.0.0.1:${origin.port}/during`), 200)
  await reload(config, '127.0.0.4')
  t.equal(await status(`http://127.0.0.1:${origin.port}/after`), 200)
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  const har = JSON.parse(readFileSync(join(directory, 'traffic.har'), 'utf8')) as { log: { entries: ForwardProxyCaptureEntry[] } }
  const paths = har.log.entries.filter((entry) => entry.request.url.startsWith('http://127.0.0.1')).map((entry) => new URL(entry.request.url).pathname)
  t.same(paths, ['/during'], 'only the request sent while capture was on')
})
