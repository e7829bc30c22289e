import { test } from 'tap'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import type { ServerResponse } from 'node:http'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { makeInterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { http2OverTls, openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'

const LINK = '</style.css>; rel=preload; as=style'

/** An origin's answer: a 103 with a Link (and a hop-by-hop field that must not pass), then the page. */
function earlyThenPage (res: ServerResponse): void {
  res.writeEarlyHints({ link: LINK, 'x-hint': 'early' })
  res.end('page')
}

test('a destination\'s 103 Early Hints reaches an HTTP/1.1 client before the final response, with our Via; an HTTP/1.0 client gets none', async (t) => {
  const origin = await startOrigin(t, (_req, res) => earlyThenPage(res))
  const proxy = await startProxy(t)
  const informational: Array<{ statusCode: number, headers: IncomingHttpHeaders }> = []
  const final = await new Promise<{ status: number, body: string }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: proxy.port, path: `http://127.0.0.1:${origin.port}/page`, agent: false }, (res) => {
      let body = ''
      res.on('data', (chunk: Buffer) => { body += chunk.toString() })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('information', (info) => informational.push({ statusCode: info.statusCode, headers: info.headers }))
    req.on('error', reject)
    req.end()
  })
  t.same(final, { status: 200, body: 'page' })
  t.equal(informational.length, 1)
  t.equal(informational[0]?.statusCode, 103)
  t.equal(informational[0]?.headers.link, LINK)
  t.equal(informational[0]?.headers['x-hint'], 'early')
  t.match(informational[0]?.headers.via, /fastify-forward-proxy/)

  const old = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/page HTTP/1.0\r\nHost: x\r\n\r\n`)
  t.match(old.text, /^HTTP\/1\.[01] 200 /, 'the final response first: an HTTP/1.0 client knows no 1xx')
  t.notMatch(old.text, /103/)
})

test('inside an intercepted tunnel too, the 103 comes ahead of the final response', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => earlyThenPage(res))
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const authority = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, authority, { ca: pki.operatorCa.cert })
  const answer = await rawTlsExchange(socket, `GET /page HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`)
  const text = `${answer.head}\r\n\r\n${answer.body}`
  t.match(text, /^HTTP\/1\.1 103 Early Hints\r\n/, 'the 103 first')
  t.match(text, /\r\nLink: <\/style\.css>; rel=preload; as=style\r\n/i)
  t.match(text, /HTTP\/1\.1 200 OK/, 'then the final response')
})

test('an HTTP/2 client inside an intercepted tunnel gets the 103 as an informational head', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => earlyThenPage(res))
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const authority = `127.0.0.1:${origin.port}`
  const session = await http2OverTls(t, await openInterceptedTls(t, proxy.port, authority, { ca: pki.operatorCa.cert, alpn: ['h2'] }), authority)
  const stream = session.request({ ':path': '/page', ':authority': authority })
  const informational: Array<Record<string, unknown>> = []
  stream.on('headers', (headers) => informational.push(headers))
  const final = await new Promise<number>((resolve) => stream.on('response', (headers) => resolve(Number(headers[':status']))))
  stream.resume()
  await new Promise((resolve) => stream.once('end', resolve))
  t.equal(final, 200)
  t.equal(informational[0]?.[':status'], 103)
  t.equal(informational[0]?.link, LINK)
})
