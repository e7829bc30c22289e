// A hostile client holding only a placeholder tries to get the value back through a destination
// that echoes it: in a body (plain, gzip, HTTP/2, server-sent events), as the Basic credential the
// proxy built, re-encoded in a redirect, in other encodings, as a header name, in a WebSocket 101
// and its frames, and after the value rotated while the request was in flight. Every one must
// come back as the placeholder, never the value, in any form the proxy can recognise.
import { test, type Test } from 'tap'
import * as zlib from 'node:zlib'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { ProxyAgent, request } from 'undici'
import type { ForwardProxySecret } from '../lib/index'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider, type InterceptingProxy, type TlsOrigin } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'
import { acceptKey } from './helpers/websocket-origin'
import { decodeFrames, decodeMessages, frame, OPCODE } from './helpers/websocket-frames'
import { deferred } from './helpers/deferred'

const VALUE = 'REAL1/ab+cd!ef=gh'
const PLACEHOLDER = 'PLACEHOLDER_ONE'
// A value made of header-name characters, for the destination that turns it into a header name.
const TOKEN_VALUE = 'rotatedtwo_abc999'
const TOKEN_PLACEHOLDER = 'PLACEHOLDER_TWO'

/** Every form of VALUE the checks below look for in what the client got. */
const b64 = (text: string): string => Buffer.from(text, 'latin1').toString('base64')
const FORMS = [
  VALUE,
  encodeURIComponent(VALUE),
  encodeURIComponent(VALUE).toLowerCase(),
  encodeURIComponent(encodeURIComponent(VALUE)),
  VALUE.replace(/\//g, '\\/'),
  VALUE.toUpperCase(),
  b64(VALUE).slice(0, 20),
  b64(`x${VALUE}`).slice(4, 24),
  b64(`xy${VALUE}`).slice(4, 24),
  b64(`x:${VALUE}`).slice(4, 24)
]

function leaks (text: string): string[] {
  return FORMS.filter((form) => text.includes(form)).concat(text.toLowerCase().includes(TOKEN_VALUE) ? [TOKEN_VALUE] : [])
}

const { zstdCompressSync } = zlib as { zstdCompressSync?: (data: string) => Buffer }

/** The destination: echoes what it got in every way a hostile client could ask for. */
function echo (req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'https://origin.test')
  const echoed = JSON.stringify({ url: req.url, headers: req.headers })
  switch (url.pathname) {
    case '/anything':
      res.setHeader('content-type', 'application/json')
      res.end(echoed)
      return
    case '/gzip':
      // httpbin's /gzip: compressed whatever the request asked for.
      res.setHeader('content-encoding', 'gzip')
      res.end(gzipSync(echoed))
      return
    case '/br':
      res.setHeader('content-encoding', 'br')
      res.end(brotliCompressSync(echoed))
      return
    case '/zstd':
      // Node 22.15 and later read zstd; Node 20 cannot, and must refuse it.
      res.setHeader('content-encoding', 'zstd')
      res.end(zstdCompressSync === undefined ? echoed : zstdCompressSync(echoed))
      return
    case '/te-gzip':
      // Compressed as a transfer coding nobody asked for: the parser undoes only chunked.
      res.setHeader('transfer-encoding', 'gzip, chunked')
      res.end(gzipSync(echoed))
      return
    case '/deflate-raw':
      // Raw deflate labelled deflate (which is zlib-wrapped): it does not decode as labelled.
      res.setHeader('content-encoding', 'deflate')
      res.end(zlib.deflateRawSync(echoed))
      return
    case '/compress':
      // A coding the proxy cannot decode: the value could hide in it.
      res.setHeader('content-encoding', 'compress')
      res.end(echoed)
      return
    case '/echo-header':
      res.setHeader('x-echo', String(req.headers.authorization))
      res.end('ok')
      return
    case '/redirect':
      res.statusCode = 302
      res.setHeader('location', `https://next.example/?q=${encodeURIComponent(encodeURIComponent(url.searchParams.get('q') ?? ''))}`)
      res.end()
      return
    case '/stored-ranges': {
      // A stored key served with byte ranges: four bytes at a time, no piece is a form a scrubber knows.
      const document = Buffer.from(JSON.stringify({ stored: VALUE }))
      const range = /^bytes=(\d+)-(\d+)$/.exec(String(req.headers.range))
      if (range === null) {
        res.setHeader('accept-ranges', 'bytes')
        res.end(document)
        return
      }
      const [first, last] = [Number(range[1]), Math.min(Number(range[2]), document.length - 1)]
      res.writeHead(206, { 'content-range': `bytes ${first}-${last}/${document.length}`, 'content-length': String(last - first + 1) })
      res.end(document.subarray(first, last + 1))
      return
    }
    case '/stored':
      // An API that returns a stored key: the request carried no placeholder.
      res.setHeader('set-cookie', [`session=${b64(VALUE)}`, `other=${b64(`xy${VALUE}`)}; Path=/`])
      res.setHeader('x-double', encodeURIComponent(encodeURIComponent(VALUE)))
      res.end([
        encodeURIComponent(VALUE),
        encodeURIComponent(VALUE).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
        JSON.stringify(VALUE).replace(/\//g, '\\/'),
        VALUE.toUpperCase(),
        b64(VALUE), b64(`x${VALUE}`), b64(`xy${VALUE}`),
        Buffer.from(VALUE).toString('base64url'), Buffer.from(`x${VALUE}`).toString('base64url')
      ].join('\n'))
      return
    case '/header-name':
      res.setHeader(`x-${url.searchParams.get('name') ?? ''}`, '1')
      res.end('ok')
      return
    default:
      res.statusCode = 404
      res.end()
  }
}

interface Setup {
  pki: InterceptionPki
  origin: TlsOrigin
  proxy: InterceptingProxy
  agent: ProxyAgent
  secrets: (value: string) => ForwardProxySecret[]
}

async function setUp (t: Test, handler: (req: IncomingMessage, res: ServerResponse) => void = echo): Promise<Setup> {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, handler)
  const secrets = (value: string): ForwardProxySecret[] => [
    { name: 'one', value, hosts: [`127.0.0.1:${origin.port}`], placeholder: PLACEHOLDER },
    { name: 'two', value: TOKEN_VALUE, hosts: [`127.0.0.1:${origin.port}`], placeholder: TOKEN_PLACEHOLDER }
  ]
  const proxy = await startInterceptingProxy(t, pki, { proxy: { secrets: secrets(VALUE) }, interception: { certificateProvider: staticProvider(pki) } })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  return { pki, origin, proxy, agent, secrets }
}

async function get (setup: Setup, path: string, headers: Record<string, string> = {}): Promise<{ status: number, head: string, body: string }> {
  const response = await request(`https://127.0.0.1:${setup.origin.port}${path}`, { dispatcher: setup.agent, headers })
  const body = Buffer.from(await response.body.arrayBuffer()).toString('latin1')
  return { status: response.statusCode, head: JSON.stringify(response.headers), body }
}

test('secrets: a destination echoing request headers into the body, plain or gzip, gives back the placeholder', async (t) => {
  const setup = await setUp(t)
  const plain = await get(setup, '/anything', { authorization: `Bearer ${PLACEHOLDER}`, 'accept-encoding': 'gzip' })
  t.equal(setup.origin.requests[0]?.headers.authorization, `Bearer ${VALUE}`, 'the destination got the value')
  t.equal(setup.origin.requests[0]?.headers['accept-encoding'], 'identity', 'a secret host is asked for an unencoded body')
  t.same(leaks(plain.head + plain.body), [])
  t.match(plain.body, `"authorization":"Bearer ${PLACEHOLDER}"`)

  const gzip = await get(setup, '/gzip', { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(gzip.status, 200)
  t.notMatch(gzip.head, /content-encoding/, 'decoded for the scrub, sent unencoded')
  t.same(leaks(gzip.head + gzip.body), [])
  t.match(gzip.body, `"authorization":"Bearer ${PLACEHOLDER}"`)
})

test('a body from a secret host in a coding the proxy cannot read gets 502 http_response_content_coding, nothing of it sent; br and (on Node 22.15+) zstd are decoded and scrubbed', async (t) => {
  const setup = await setUp(t)
  const refused = await get(setup, '/compress', { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(refused.status, 502)
  t.match(refused.head, /error=http_response_content_coding; details=\\"content coding not readable for scrubbing\\"/)
  t.same(leaks(refused.head + refused.body), [])
  t.notMatch(refused.body, /authorization/, 'none of the destination\'s body was sent')
  const zstd = await get(setup, '/zstd', { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(zstd.status, zstdCompressSync === undefined ? 502 : 200, 'zstd is decoded where Node can, refused where it cannot')
  t.same(leaks(zstd.head + zstd.body), [])
  const brotli = await get(setup, '/br', { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(brotli.status, 200)
  t.same(leaks(brotli.head + brotli.body), [])
  t.match(brotli.body, `"authorization":"Bearer ${PLACEHOLDER}"`)
})

test('a secret host\'s body in a transfer coding other than chunked gets 502 http_response_transfer_coding, and one that does not decode as its Content-Encoding 502 http_response_content_coding: the value never reaches the client compressed', async (t) => {
  const setup = await setUp(t)
  const transfer = await get(setup, '/te-gzip', { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(transfer.status, 502)
  t.match(transfer.head, /error=http_response_transfer_coding; details=\\"transfer coding other than chunked\\"/)
  t.same(leaks(transfer.head + transfer.body), [])
  t.notOk(transfer.body.includes('\u001f\u008b'), 'no gzip member was passed on')
  const raw = await get(setup, '/deflate-raw', { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(raw.status, 502, 'the decoder fails on the first bytes, before the head is out')
  t.same(leaks(raw.head + raw.body), [])
  t.match(raw.head, /error=http_response_content_coding; details=\\"body does not decode as its content coding\\"/)
})

test('secrets over HTTP/2 inside the tunnel: the echoed body gives back the placeholder', async (t) => {
  const setup = await setUp(t)
  const authority = `127.0.0.1:${setup.origin.port}`
  const socket = await openInterceptedTls(t, setup.proxy.port, authority, { ca: setup.pki.operatorCa.cert, alpn: ['h2'] })
  const session = await http2OverTls(t, socket, authority)
  const answer = await http2Request(session, { ':path': '/anything', authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(answer.status, 200)
  t.same(leaks(JSON.stringify(answer.headers) + answer.body), [])
  t.match(answer.body, PLACEHOLDER)
})

test('secrets: the Basic credential the proxy built, echoed in a header, comes back as the client sent it', async (t) => {
  const setup = await setUp(t)
  const sent = `Basic ${b64(`x:${PLACEHOLDER}`)}`
  const answer = await get(setup, '/echo-header', { authorization: sent })
  t.equal(setup.origin.requests[0]?.headers.authorization, `Basic ${b64(`x:${VALUE}`)}`)
  t.same(leaks(answer.head + answer.body), [])
  t.match(answer.head, `"x-echo":"${sent}"`, 'exactly what the client sent')
})

test('secrets: a redirect that re-encodes the value twice gives back the placeholder', async (t) => {
  const setup = await setUp(t)
  const answer = await get(setup, `/redirect?q=${PLACEHOLDER}`)
  t.equal(answer.status, 302)
  t.same(leaks(answer.head), [])
  t.match(answer.head, PLACEHOLDER)
})

test('secrets: a stored key cannot be read back a few bytes at a time: Range and If-Range are not sent to a secret\'s host, which answers the whole body, scrubbed', async (t) => {
  const setup = await setUp(t)
  let pieced = ''
  for (let first = 0; first < 40; first += 4) {
    const answer = await get(setup, '/stored-ranges', { range: `bytes=${first}-${first + 3}`, 'if-range': '"any"' })
    t.equal(answer.status, 200, `bytes ${first}-${first + 3}: the whole body`)
    t.same(leaks(answer.head + answer.body), [])
    pieced += answer.body.slice(first, first + 4)
  }
  t.same(leaks(pieced), [], 'the pieces put together hold no value either')
  t.ok(setup.origin.requests.every((seen) => seen.headers.range === undefined && seen.headers['if-range'] === undefined), 'the destination never got a range')
})

test('secrets: a stored key returned percent-encoded, lower-case hex, JSON-escaped, upper-cased and in base64 (body and Set-Cookie) never reaches the client, though the request carried no placeholder', async (t) => {
  const setup = await setUp(t)
  const answer = await get(setup, '/stored')
  t.equal(answer.status, 200)
  t.same(leaks(answer.head + answer.body), [])
  t.ok(answer.body.split(PLACEHOLDER).length - 1 >= 9, 'each form became the placeholder')
})

test('secrets: a value turned into a response header name is renamed', async (t) => {
  const setup = await setUp(t)
  const answer = await get(setup, `/header-name?name=${TOKEN_PLACEHOLDER}`)
  t.equal(answer.status, 200)
  t.same(leaks(answer.head), [])
  t.match(answer.head.toLowerCase(), `x-${TOKEN_PLACEHOLDER.toLowerCase()}`)
})

test('secrets: a value rotated while the request is in flight is still scrubbed from its response', async (t) => {
  const released = deferred()
  const arrival = deferred()
  const setup = await setUp(t, (req, res) => {
    arrival.resolve()
    void released.promise.then(() => {
      res.setHeader('x-echo', String(req.headers.authorization))
      res.end(String(req.headers.authorization))
    })
  })
  const pending = get(setup, '/slow', { authorization: `Bearer ${PLACEHOLDER}` })
  await arrival.promise
  setup.proxy.app.forwardProxy.reconfigure({ secrets: setup.secrets('ROTATED-9f8e7d6c5b'), destinations: { allowPrivateNetworks: true, allowedPorts: '*' } })
  released.resolve()
  const answer = await pending
  t.equal(setup.origin.requests[0]?.headers.authorization, `Bearer ${VALUE}`, 'the request left with the old value')
  t.same(leaks(answer.head + answer.body), [])
  t.equal(answer.body, `Bearer ${PLACEHOLDER}`)
})

test('secrets: a value its source rotated while the request was in flight is still scrubbed from its response', async (t) => {
  const values = [VALUE, 'ROTATED-9f8e7d6c5b']
  let asked = 0
  const released = deferred()
  const arrival = deferred()
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (req, res) => {
    const answer = (): void => { res.setHeader('x-echo', String(req.headers.authorization)); res.end(String(req.headers.authorization)) }
    if (req.url === '/slow') {
      arrival.resolve()
      void released.promise.then(answer)
    } else answer()
  })
  // maxAge 0: every request asks the source again, the second one gets the rotated value.
  const source = { getValue: async () => ({ value: values[Math.min(asked++, 1)] as string, maxAge: 0 }) }
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { secrets: [{ name: 'one', source, hosts: [`127.0.0.1:${origin.port}`], placeholder: PLACEHOLDER }] },
    interception: { certificateProvider: staticProvider(pki) }
  })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  const setup = { pki, origin, proxy, agent, secrets: () => [] }
  const pending = get(setup, '/slow', { authorization: `Bearer ${PLACEHOLDER}` })
  await arrival.promise
  const rotated = await get(setup, '/now', { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(origin.requests.find((seen) => seen.url === '/now')?.headers.authorization, 'Bearer ROTATED-9f8e7d6c5b', 'the source rotated the value')
  t.equal(rotated.body, `Bearer ${PLACEHOLDER}`)
  released.resolve()
  const answer = await pending
  t.equal(origin.requests.find((seen) => seen.url === '/slow')?.headers.authorization, `Bearer ${VALUE}`, 'the first request left with the old value')
  t.same(leaks(answer.head + answer.body), [])
  t.equal(answer.body, `Bearer ${PLACEHOLDER}`)
})

test('secrets: the values a secret had before a rotation (by reconfigure or by its source) are still scrubbed from later responses, the last two of them', async (t) => {
  const ROTATED = ['ROTATED-one-1a2b3c', 'ROTATED-two-4d5e6f', 'ROTATED-three-7a8b9c']
  const setup = await setUp(t, (req, res) => {
    // An API that shows a key it stored: the request carries no placeholder.
    res.end(`stored ${new URL(req.url ?? '/', 'https://x').searchParams.get('which') ?? ''}`)
  })
  const destinations = { allowPrivateNetworks: true, allowedPorts: '*' as const }
  const shows = async (which: string): Promise<string> => (await get(setup, `/stored?which=${encodeURIComponent(which)}`)).body
  setup.proxy.app.forwardProxy.reconfigure({ secrets: setup.secrets(ROTATED[0] as string), destinations })
  t.equal(await shows(VALUE), `stored ${PLACEHOLDER}`, 'the value before the reconfigure is scrubbed after it')
  t.equal(await shows(ROTATED[0] as string), `stored ${PLACEHOLDER}`, 'and the value now')
  setup.proxy.app.forwardProxy.reconfigure({ secrets: setup.secrets(ROTATED[1] as string), destinations })
  setup.proxy.app.forwardProxy.reconfigure({ secrets: setup.secrets(ROTATED[2] as string), destinations })
  t.equal(await shows(ROTATED[0] as string), `stored ${PLACEHOLDER}`, 'two rotations back')
  t.equal(await shows(ROTATED[1] as string), `stored ${PLACEHOLDER}`, 'one rotation back')
  t.equal(await shows(VALUE), `stored ${VALUE}`, 'three rotations back: no longer searched for')

  const values = ['SOURCE-first-0a1b2c', 'SOURCE-second-3d4e5f']
  let asked = 0
  const source = { getValue: async () => ({ value: values[Math.min(asked++, 1)] as string, maxAge: 0 }) }
  setup.proxy.app.forwardProxy.reconfigure({ secrets: [{ name: 'one', source, hosts: [`127.0.0.1:${setup.origin.port}`], placeholder: PLACEHOLDER }], destinations })
  await get(setup, '/first', { authorization: `Bearer ${PLACEHOLDER}` })
  await get(setup, '/second', { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(asked, 2, 'the source was asked twice and rotated')
  t.equal(await shows(values[0] as string), `stored ${PLACEHOLDER}`, 'the value the source gave before is scrubbed')
  t.equal(await shows(ROTATED[2] as string), `stored ${PLACEHOLDER}`, 'as is the value the option gave before the source')
})

test('secrets: server-sent events keep streaming: each event reaches the client scrubbed before the next is sent', async (t) => {
  const next: Array<() => void> = []
  const setup = await setUp(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    let sent = 0
    const send = (): void => {
      sent++
      if (sent > 3) { res.end(); return }
      res.write(`data: ${VALUE} ${sent}\n\n`)
      next.push(send)
    }
    send()
  })
  const response = await request(`https://127.0.0.1:${setup.origin.port}/events`, { dispatcher: setup.agent })
  let text = ''
  let events = 0
  for await (const chunk of response.body) {
    text += (chunk as Buffer).toString('latin1')
    const complete = text.split('\n\n').length - 1
    if (complete > events) {
      events = complete
      // The destination sends the next event only once this one has reached the client.
      next.shift()?.()
    }
  }
  t.equal(events, 3)
  t.same(leaks(text), [])
  t.equal(text, [1, 2, 3].map((n) => `data: ${PLACEHOLDER} ${n}\n\n`).join(''))
})

test('secrets: a large body with values at every kind of boundary streams back scrubbed', async (t) => {
  const filler = randomBytes(3 << 20).toString('base64')
  const setup = await setUp(t, (_req, res) => {
    // Odd-sized writes put the values across chunk boundaries.
    const body = filler.replace(/A{2}/g, () => VALUE)
    for (let at = 0; at < body.length; at += 65_537) res.write(body.slice(at, at + 65_537))
    res.end()
  })
  const expected = filler.replace(/A{2}/g, () => PLACEHOLDER)
  const answer = await get(setup, '/large')
  t.equal(answer.body.length, expected.length)
  t.ok(answer.body === expected, 'every value became the placeholder, nothing else changed')
})

test('secrets: a WebSocket 101 echoing the credential in Upgrade and the first frame gives back the placeholder; permessage-deflate is not offered', async (t) => {
  const pki = await makeInterceptionPki(t)
  const seen: Array<IncomingMessage['headers']> = []
  const server = createHttpsServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key })
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    seen.push(req.headers)
    const credential = String(req.headers.authorization)
    socket.write([
      'HTTP/1.1 101 Switching Protocols',
      `Upgrade: websocket, ${credential}`,
      'Connection: Upgrade',
      `Sec-WebSocket-Accept: ${acceptKey(String(req.headers['sec-websocket-key']))}`,
      `X-Echo: ${credential}`
    ].join('\r\n') + '\r\n\r\n')
    socket.write(frame(OPCODE.text, `hello ${credential}`))
    socket.write(frame(OPCODE.text, `${VALUE.slice(0, 5)}`, { fin: false }))
    socket.end(frame(OPCODE.continuation, `${VALUE.slice(5)} end`))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const port = (server.address() as AddressInfo).port
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { secrets: [{ name: 'one', value: VALUE, hosts: [`127.0.0.1:${port}`], placeholder: PLACEHOLDER }] },
    interception: { certificateProvider: staticProvider(pki) }
  })
  const target = `127.0.0.1:${port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const received: Buffer[] = []
  socket.on('data', (chunk: Buffer) => received.push(chunk))
  const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()))
  socket.write(['GET /ws HTTP/1.1', `Host: ${target}`, 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`, 'Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits', `Authorization: Bearer ${PLACEHOLDER}`].join('\r\n') + '\r\n\r\n')
  await ended
  const all = Buffer.concat(received)
  const headEnd = all.indexOf('\r\n\r\n')
  const head = all.subarray(0, headEnd).toString('latin1')
  t.match(head, /^HTTP\/1\.1 101 /)
  t.equal(seen[0]?.authorization, `Bearer ${VALUE}`)
  t.equal(seen[0]?.['sec-websocket-extensions'], undefined, 'no extension was offered to the destination')
  const messages = decodeMessages(decodeFrames(all.subarray(headEnd + 4))).map((message) => message.payload.toString('latin1'))
  t.same(leaks(head + messages.join('')), [])
  t.match(head, `Upgrade: websocket, Bearer ${PLACEHOLDER}`)
  t.same(messages, [`hello Bearer ${PLACEHOLDER}`, `${PLACEHOLDER} end`])
})
