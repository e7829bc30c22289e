import { test } from 'tap'
import { gzipSync } from 'node:zlib'
import { ProxyAgent, request } from 'undici'
import type { ForwardProxyCaptureEntry, ForwardProxyCaptureStream } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { startOrigin } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'
import { absoluteFormAgent } from './helpers/forward-client'
import { capturedLog } from './helpers/captured-log'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'

/** The next entry of `feed`. */
async function nextEntry (feed: ForwardProxyCaptureStream): Promise<ForwardProxyCaptureEntry> {
  const { value, done } = await feed.next()
  if (done === true) throw new Error('the capture iterator ended')
  return value
}

function header (headers: ReadonlyArray<{ name: string, value: string }>, name: string): string | undefined {
  return headers.find((pair) => pair.name.toLowerCase() === name)?.value
}

test('a request inside an intercepted tunnel is recorded as sent to the destination (after hooks and transforms) with the response as the client received it, its timings and the proxy\'s fields', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res, body) => {
    res.setHeader('content-type', 'application/json')
    res.setHeader('x-origin', 'yes')
    res.end(JSON.stringify({ echoed: body }))
  })
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: {
      auth: { users: { alice: 'alice-password-1' } },
      capture: {},
      transforms: [{ transformRequest: (_request, _destination, outgoing) => { outgoing.headers['x-added-by-transform'] = '1' } }]
    },
    interception: interceptAll(pki),
    setup (app) {
      app.addHook('onRequest', async (req) => { if (req.interception !== null) req.headers['x-added-by-hook'] = 'hook' })
      app.addHook('onSend', async (req, reply) => { if (req.interception !== null) reply.header('x-added-on-send', 'sent') })
    }
  })
  const feed = proxy.app.forwardProxy.captures()
  const agent = new ProxyAgent({ uri: proxy.url, token: `Basic ${Buffer.from('alice:alice-password-1').toString('base64')}`, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())

  const answer = await request(`https://127.0.0.1:${origin.port}/items?page=2&q=a%20b`, { method: 'POST', dispatcher: agent, body: 'name=widget', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(answer.statusCode, 200)
  t.same(await answer.body.json(), { echoed: 'name=widget' })

  const entry = await nextEntry(feed)
  t.equal(entry.request.method, 'POST')
  t.equal(entry.request.url, `https://127.0.0.1:${origin.port}/items?page=2&q=a%20b`)
  t.equal(entry.request.httpVersion, 'HTTP/1.1')
  t.same(entry.request.queryString, [{ name: 'page', value: '2' }, { name: 'q', value: 'a b' }])
  t.equal(header(entry.request.headers, 'x-added-by-hook'), 'hook', 'the application hook\'s edit is recorded')
  t.equal(header(entry.request.headers, 'x-added-by-transform'), '1', 'the transform\'s edit is recorded')
  t.equal(header(entry.request.headers, 'via'), '1.1 fastify-forward-proxy')
  t.same(entry.request.postData, { mimeType: 'application/x-www-form-urlencoded', text: 'name=widget' })
  t.equal(entry.request.bodySize, 11)
  t.equal(entry.response.status, 200)
  t.equal(entry.response.statusText, 'OK')
  t.equal(header(entry.response.headers, 'x-origin'), 'yes')
  t.equal(header(entry.response.headers, 'x-added-on-send'), 'sent', 'the response as the client got it, onSend hooks included')
  t.same(entry.response.content, { size: 24, mimeType: 'application/json', text: '{"echoed":"name=widget"}' })
  t.equal(entry._user, 'alice')
  t.equal(entry._intercepted, true)
  t.equal(entry._decision, 'allow')
  t.equal(entry.serverIPAddress, '127.0.0.1')
  t.ok(entry.timings.connect >= 0 && entry.timings.ssl >= 0, 'the first request on a new connection waited for its TCP connect and TLS handshake')
  for (const phase of ['blocked', 'send', 'wait', 'receive'] as const) t.ok(entry.timings[phase] >= 0, `${phase} measured`)
  const { blocked, connect, ssl, send, wait, receive } = entry.timings
  t.ok(Math.abs(entry.time - (blocked + connect + ssl + send + wait + receive)) < 0.01, 'time is the sum of the timings')
  t.ok(Date.parse(entry.startedDateTime) <= Date.now())

  const again = await request(`https://127.0.0.1:${origin.port}/again`, { dispatcher: agent })
  await again.body.text()
  const reused = await nextEntry(feed)
  t.equal(reused.timings.connect, -1, 'a request on a reused connection did not wait for a dial')
  t.equal(reused.timings.ssl, -1)
  t.notOk('postData' in reused.request, 'a request without a body has no postData')
})

test('secrets are recorded as their placeholders, in heads and bodies; Proxy-Authorization is never written and redactHeaders are blanked', async (t) => {
  const secret = 'sk-live-capture-4Qf9xZ2pL8'
  const placeholder = 'PLACEHOLDER_API_KEY'
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (req, res, body) => {
    res.setHeader('content-type', 'text/plain')
    res.setHeader('x-echo-key', String(req.headers['x-api-key']))
    res.setHeader('set-cookie', 'session=origin-session-value')
    res.end(`key=${String(req.headers['x-api-key'])} body=${body}`)
  })
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: {
      auth: { users: { alice: 'alice-password-2' } },
      secrets: [{ name: 'api', value: secret, placeholder, hosts: [`127.0.0.1:${origin.port}`] }],
      capture: { file: undefined, redactHeaders: ['authorization', 'cookie', 'set-cookie', 'x-team-token'] }
    },
    interception: { certificateProvider: staticProvider(pki) }
  })
  const feed = proxy.app.forwardProxy.captures()
  const credentials = Buffer.from('alice:alice-password-2').toString('base64')
  const agent = new ProxyAgent({ uri: proxy.url, token: `Basic ${credentials}`, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())

  // The client never holds the value; a body carrying it anyway (a copy-paste) is recorded scrubbed.
  const answer = await request(`https://127.0.0.1:${origin.port}/use`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'x-api-key': placeholder, cookie: 'client-cookie=c1', 'x-team-token': 'team-token-value', 'content-type': 'text/plain', 'accept-encoding': 'gzip', range: 'bytes=0-3' },
    body: `pasted ${secret}`
  })
  t.equal(answer.statusCode, 200)
  t.equal(await answer.body.text(), `key=${placeholder} body=pasted ${placeholder}`, 'the client got placeholders back (the response scrubber)')
  t.equal(origin.requests[0]?.headers['x-api-key'], secret, 'the destination got the value')

  const entry = await nextEntry(feed)
  const text = JSON.stringify(entry)
  t.notOk(text.includes(secret), 'no secret value anywhere in the entry')
  t.notOk(text.includes(credentials) || text.includes('alice-password-2'), 'no proxy credential anywhere in the entry')
  t.notOk(/proxy-authorization/i.test(text))
  t.equal(header(entry.request.headers, 'x-api-key'), placeholder)
  t.equal(header(entry.request.headers, 'accept-encoding'), 'identity', 'what a scrubbed response was asked for, as the destination got it')
  t.equal(header(entry.request.headers, 'range'), undefined)
  t.equal(origin.requests[0]?.headers['accept-encoding'], 'identity')
  t.equal(header(entry.request.headers, 'cookie'), '[redacted]')
  t.equal(header(entry.request.headers, 'x-team-token'), '[redacted]', 'a configured name is redacted too')
  t.same(entry.request.cookies, [])
  t.equal(entry.request.postData?.text, `pasted ${placeholder}`)
  t.equal(header(entry.response.headers, 'x-echo-key'), placeholder)
  t.equal(header(entry.response.headers, 'set-cookie'), '[redacted]')
  t.same(entry.response.cookies, [])
  t.notOk(text.includes('origin-session-value') || text.includes('client-cookie=c1') || text.includes('team-token-value'))
})

test('capture.hosts and capture.users choose what is recorded; requests left out are answered as usual', async (t) => {
  const origin = await startOrigin(t)
  const other = await startOrigin(t)
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: {
      auth: { users: { alice: 'alice-password-3', bob: 'bob-password-3' } },
      resolver: async () => [{ address: '127.0.0.1', family: 4 }],
      capture: { hosts: ['recorded.test'], users: ['alice'] }
    },
    interception: interceptAll(pki)
  })
  const feed = proxy.app.forwardProxy.captures()
  const get = async (user: string, host: string, port: number): Promise<number> => {
    const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false, token: `Basic ${Buffer.from(`${user}:${user}-password-3`).toString('base64')}` })
    try {
      const answer = await request(`http://${host}:${port}/${user}-${host}`, { dispatcher: agent })
      await answer.body.text()
      return answer.statusCode
    } finally {
      await agent.close()
    }
  }
  t.equal(await get('bob', 'recorded.test', origin.port), 200, 'bob is not in capture.users')
  t.equal(await get('alice', 'elsewhere.test', other.port), 200, 'elsewhere.test is not in capture.hosts')
  t.equal(await get('alice', 'recorded.test', origin.port), 200)
  const entry = await nextEntry(feed)
  t.equal(entry.request.url, `http://recorded.test:${origin.port}/alice-recorded.test`, 'the first entry is the request both filters take: the two before it were left out')
  t.equal(entry._user, 'alice')
  t.equal(entry._intercepted, false)
})

test('bodies: maxBodyBytes cuts them with a comment, 0 keeps heads only, compressed bodies are stored decoded and binary ones as base64', async (t) => {
  const big = 'x'.repeat(5000)
  const origin = await startOrigin(t, (req, res) => {
    if (req.url === '/gzip') {
      res.setHeader('content-type', 'text/plain')
      res.setHeader('content-encoding', 'gzip')
      res.end(gzipSync('decoded text'))
    } else if (req.url === '/utf8') {
      res.setHeader('content-type', 'text/plain; charset=utf-8')
      res.end('x' + 'é'.repeat(600))
    } else if (req.url === '/binary') {
      res.setHeader('content-type', 'application/octet-stream')
      res.end(Buffer.from([0, 1, 2, 255]))
    } else {
      res.setHeader('content-type', 'text/plain')
      res.end(big)
    }
  })
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, { proxy: { capture: { maxBodyBytes: 1000 } }, interception: interceptAll(pki) })
  const feed = proxy.app.forwardProxy.captures()
  const agent = absoluteFormAgent(t, proxy.url)
  const get = async (path: string): Promise<ForwardProxyCaptureEntry> => {
    const answer = await request(`http://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })
    await answer.body.arrayBuffer()
    return await nextEntry(feed)
  }

  const cut = await get('/big')
  t.equal(cut.response.content.text, 'x'.repeat(1000))
  t.equal(cut.response.content.size, 5000)
  t.match(cut.response.content.comment, /^truncated: the first 1000 bytes kept/)
  t.equal(cut.response.bodySize, 5000)

  const utf8 = await get('/utf8')
  t.equal(utf8.response.content.text, 'x' + 'é'.repeat(499), 'a text cut inside a character stays text, the unfinished character dropped')
  t.notOk('encoding' in utf8.response.content)

  const gzip = await get('/gzip')
  t.equal(gzip.response.content.text, 'decoded text')
  t.equal(gzip.response.content.size, 12)
  t.equal(header(gzip.response.headers, 'content-encoding'), 'gzip')

  const binary = await get('/binary')
  t.same({ text: binary.response.content.text, encoding: binary.response.content.encoding }, { text: 'AAEC/w==', encoding: 'base64' })

  proxy.app.forwardProxy.reconfigure({ destinations: { allowPrivateNetworks: true, allowedPorts: '*' }, capture: { maxBodyBytes: 0 } })
  const headsOnly = await get('/big')
  t.notOk('text' in headsOnly.response.content, 'no body with maxBodyBytes 0')
  t.equal(headsOnly.response.content.size, 5000)
  t.equal(headsOnly.response.content.comment, 'body not kept (maxBodyBytes 0)')
})

test('an HTTP/2 request inside an intercepted tunnel is recorded with the version the client spoke', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { proxy: { capture: {} }, interception: { ...interceptAll(pki), clientProtocols: 'http1AndHttp2' } })
  const feed = proxy.app.forwardProxy.captures()
  const authority = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, authority, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  const session = await http2OverTls(t, socket, authority)
  t.equal((await http2Request(session, { ':path': '/over-h2' })).status, 200)
  const entry = await nextEntry(feed)
  t.equal(entry.request.url, `https://${authority}/over-h2`)
  t.equal(entry.request.httpVersion, 'HTTP/1.1', 'requests leave for the destination over HTTP/1.1')
  t.equal(entry.response.httpVersion, 'HTTP/2.0', 'the client got its response over HTTP/2')
  t.notOk(entry.request.headers.some((pair) => pair.name.startsWith(':')))
})

test('a tunnel relayed opaquely gets one entry with its byte counts and duration and no content', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await (async () => {
    const pki = await makeInterceptionPki(t)
    return await startInterceptingProxy(t, pki, { proxy: { capture: {} }, interception: { certificateProvider: staticProvider(pki) } })
  })()
  const feed = proxy.app.forwardProxy.captures()
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`)
  t.equal(tunnel.status, 200)
  const ask = `GET /inside HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`
  tunnel.socket.write(ask)
  tunnel.socket.resume()
  let down = tunnel.rest.length
  tunnel.socket.on('data', (chunk: Buffer) => { down += chunk.length })
  await new Promise((resolve) => tunnel.socket.once('close', resolve))
  const entry = await nextEntry(feed)
  t.equal(entry.request.method, 'CONNECT')
  t.equal(entry.request.url, `https://127.0.0.1:${origin.port}/`)
  t.equal(entry._tunnel, 'opaque')
  t.equal(entry._bytesUp, ask.length)
  t.equal(entry._bytesDown, down)
  t.equal(entry.response.status, 200)
  t.notOk('text' in entry.response.content)
  t.ok(entry.timings.receive >= 0)
  t.equal(entry._intercepted, false)
})

test('each captures() call gets its own iterator; one whose consumer is behind drops entries and counts them, never holding a request back', async (t) => {
  const origin = await startOrigin(t)
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, { proxy: { capture: {} }, interception: interceptAll(pki) })
  const slow = proxy.app.forwardProxy.captures({ bufferSize: 2 })
  const reader = proxy.app.forwardProxy.captures()
  const agent = absoluteFormAgent(t, proxy.url)
  const urls: string[] = []
  for (let i = 0; i < 5; i++) {
    const answer = await request(`http://127.0.0.1:${origin.port}/n${i}`, { dispatcher: agent })
    t.equal(answer.statusCode, 200, `request ${i} answered while the slow iterator was not read`)
    await answer.body.text()
    urls.push((await nextEntry(reader)).request.url)
  }
  t.same(urls, [0, 1, 2, 3, 4].map((i) => `http://127.0.0.1:${origin.port}/n${i}`), 'the reading iterator got every entry')
  t.equal(slow.dropped, 3)
  t.equal((await nextEntry(slow)).request.url, urls[0])
  t.equal((await nextEntry(slow)).request.url, urls[1])
  await slow.return?.()
  t.same(await slow.next(), { value: undefined, done: true }, 'return() ends it')
  t.throws(() => proxy.app.forwardProxy.captures({ bufferSize: 0 }), { code: 'FFP_ERR_INVALID_OPTION' })
})

test('capture turns on and off with reconfigure; the iterators stay open across it', async (t) => {
  const origin = await startOrigin(t)
  const pki = await makeInterceptionPki(t)
  const base = { destinations: { allowPrivateNetworks: true, allowedPorts: '*' as const } }
  const proxy = await startInterceptingProxy(t, pki, { proxy: base, interception: interceptAll(pki) })
  const feed = proxy.app.forwardProxy.captures()
  const agent = absoluteFormAgent(t, proxy.url)
  const get = async (path: string): Promise<void> => { await (await request(`http://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })).body.text() }
  await get('/before')
  proxy.app.forwardProxy.reconfigure({ ...base, capture: {} })
  await get('/during')
  proxy.app.forwardProxy.reconfigure(base)
  await get('/after')
  proxy.app.forwardProxy.reconfigure({ ...base, capture: {} })
  await get('/again')
  t.equal((await nextEntry(feed)).request.url, `http://127.0.0.1:${origin.port}/during`, '/before was not recorded')
  t.equal((await nextEntry(feed)).request.url, `http://127.0.0.1:${origin.port}/again`, '/after was not recorded')
})

test('a request the proxy refuses is recorded as received, without its Proxy-Authorization, with the proxy\'s answer, its decision and error type', async (t) => {
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { capture: {}, auth: { users: { alice: 'alice-password-4' } }, destinations: { deniedHosts: ['denied.test'] } },
    interception: interceptAll(pki)
  })
  const feed = proxy.app.forwardProxy.captures()
  const credentials = Buffer.from('alice:alice-password-4').toString('base64')
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false, token: `Basic ${credentials}` })
  t.teardown(() => agent.close())
  const answer = await request('http://denied.test/secret-path?x=1', { dispatcher: agent, headers: { 'x-client': 'kept' } })
  t.equal(answer.statusCode, 403)
  await answer.body.text()
  const entry = await nextEntry(feed)
  t.equal(entry.request.url, 'http://denied.test/secret-path?x=1')
  t.equal(header(entry.request.headers, 'x-client'), 'kept', 'the head as received')
  t.notOk(JSON.stringify(entry).includes(credentials) || /proxy-authorization/i.test(JSON.stringify(entry)), 'no Proxy-Authorization, though the request as received carried one')
  t.equal(entry.response.status, 403)
  t.equal(entry._user, 'alice')
  t.equal(entry._decision, 'deny')
  t.equal(entry._errorType, 'http_request_denied')
  t.match(header(entry.response.headers, 'proxy-status'), /error=http_request_denied/)
  t.equal(entry.serverIPAddress, undefined, 'nothing was dialed')
})

test('a capture file that cannot be written logs one line and stops; requests are answered as usual and the iterators still get every entry', async (t) => {
  const origin = await startOrigin(t)
  const pki = await makeInterceptionPki(t)
  const log = capturedLog()
  const missing = join(t.testdir(), 'no-such-folder', 'traffic.har')
  const proxy = await startInterceptingProxy(t, pki, { proxy: { capture: { file: missing } }, interception: interceptAll(pki), server: { logger: log.logger } })
  const feed = proxy.app.forwardProxy.captures()
  const agent = absoluteFormAgent(t, proxy.url)
  for (let i = 0; i < 3; i++) {
    const answer = await request(`http://127.0.0.1:${origin.port}/n${i}`, { dispatcher: agent })
    t.equal(answer.statusCode, 200)
    await answer.body.text()
    t.equal((await nextEntry(feed)).request.url, `http://127.0.0.1:${origin.port}/n${i}`)
  }
  const stopped = log.lines().filter((line) => line.includes('capture file stopped'))
  t.equal(stopped.length, 1, 'one line, however many entries came after')
  t.match(stopped[0], /"level":50/)
  t.ok(stopped[0]?.includes(JSON.stringify(missing)), 'the line names the file')
})

test('reconfigure to another file closes the first, valid with its entries, and the next requests go to the second; nothing is lost in the switch', async (t) => {
  const origin = await startOrigin(t)
  const pki = await makeInterceptionPki(t)
  const directory = t.testdir()
  const first = join(directory, 'first.har')
  const second = join(directory, 'second.har')
  const base = { destinations: { allowPrivateNetworks: true, allowedPorts: '*' as const } }
  const proxy = await startInterceptingProxy(t, pki, { proxy: { ...base, capture: { file: first } }, interception: interceptAll(pki) })
  const agent = absoluteFormAgent(t, proxy.url)
  const get = async (path: string): Promise<void> => { await (await request(`http://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })).body.text() }
  await get('/one')
  await get('/two')
  proxy.app.forwardProxy.reconfigure({ ...base, capture: { file: second } })
  // Sent at once, while the first file may still be closing.
  await get('/three')
  await proxy.app.close()
  const urls = (path: string): string[] => (JSON.parse(readFileSync(path, 'utf8')) as { log: { entries: ForwardProxyCaptureEntry[] } }).log.entries.map((entry) => new URL(entry.request.url).pathname)
  t.same(urls(first), ['/one', '/two'])
  t.same(urls(second), ['/three'])
})

test('a body cut at maxBodyBytes in the middle of a secret value keeps none of its beginning', async (t) => {
  const secret = 'sk-live-cut-Zq81mNc4Lp0Wv7'
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => res.end('ok'))
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { secrets: [{ name: 'api', value: secret, placeholder: 'PLACEHOLDER_CUT', hosts: [`127.0.0.1:${origin.port}`] }], capture: { maxBodyBytes: 1000 } },
    interception: { certificateProvider: staticProvider(pki) }
  })
  const feed = proxy.app.forwardProxy.captures()
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  // The first 1000 bytes end with the first 10 characters of the value.
  const body = `${'x'.repeat(990)}${secret} and more`
  const answer = await request(`https://127.0.0.1:${origin.port}/upload`, { method: 'POST', dispatcher: agent, body, headers: { 'content-type': 'text/plain' } })
  await answer.body.text()
  const entry = await nextEntry(feed)
  const text = entry.request.postData?.text ?? ''
  t.equal(text, 'x'.repeat(990), 'the cut-off beginning of the value is left out')
  t.notOk(JSON.stringify(entry).includes(secret.slice(0, 10)))
  t.equal(entry.request.postData?.comment, `truncated: the first 990 of ${Buffer.byteLength(body)} bytes kept (maxBodyBytes 1000)`)
})
