import { test } from 'tap'
import { Readable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { ProxyAgent, request } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'

/** Response headers an application's onSend hook tries to set that only a hop may set. */
const HOP_BY_HOP_EDITS: Record<string, string> = {
  connection: 'x-origin',
  'keep-alive': 'timeout=1',
  'proxy-connection': 'keep-alive',
  'proxy-authenticate': 'Basic realm="hook"',
  upgrade: 'websocket',
  trailer: 'x-trailer',
  te: 'trailers'
}

/** The response head of a raw exchange, names lower-cased (repeats joined with ", "). */
function headOf (text: string): Record<string, string> {
  const head: Record<string, string> = {}
  for (const line of text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n').slice(1)) {
    const colon = line.indexOf(':')
    const name = line.slice(0, colon).toLowerCase()
    const value = line.slice(colon + 1).trim()
    head[name] = head[name] === undefined ? value : `${head[name]}, ${value}`
  }
  return head
}

/**
 * The body of a raw chunked response: its chunks' data joined, or undefined when the chunks do
 * not parse or do not end with the last (zero-size) chunk and nothing after it.
 */
function chunkedBodyOf (text: string): string | undefined {
  let rest = text.slice(text.indexOf('\r\n\r\n') + 4)
  let body = ''
  for (;;) {
    const lineEnd = rest.indexOf('\r\n')
    if (lineEnd === -1) return undefined
    const size = parseInt(rest.slice(0, lineEnd), 16)
    if (Number.isNaN(size)) return undefined
    const data = rest.slice(lineEnd + 2, lineEnd + 2 + size)
    if (rest.slice(lineEnd + 2 + size, lineEnd + 4 + size) !== '\r\n') return undefined
    rest = rest.slice(lineEnd + 4 + size)
    if (size === 0) return rest === '' ? body : undefined
    body += data
  }
}

test('onSend on http:// forwarded responses: the application\'s hook runs (after the head is built, with the body still a stream) and its headers are sent, except hop-by-hop and Connection-listed names; the client\'s Connection: close still closes', async (t) => {
  const origin = await startOrigin(t, (_req, res) => { res.setHeader('x-origin', 'from the origin'); res.end('origin body') })
  const seen: string[] = []
  const proxy = await startProxy(t, {}, (app: FastifyInstance) => {
    app.addHook('onSend', async (request, reply, payload) => {
      seen.push(`${request.interception === null ? 'not intercepted' : 'intercepted'}, payload ${payload instanceof Readable ? 'stream' : typeof payload}, via ${String(reply.getHeader('via'))}`)
      reply.header('x-app', 'added by the application')
      for (const [name, value] of Object.entries(HOP_BY_HOP_EDITS)) reply.header(name, value)
      return payload
    })
  })
  const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 200, 'answered, and the connection closed as the client asked')
  t.same(seen, ['not intercepted, payload stream, via 1.1 fastify-forward-proxy'])
  const head = headOf(answer.text)
  t.equal(head['x-app'], 'added by the application')
  t.equal(head.connection, 'close', 'Node\'s own Connection: close, not the hook\'s')
  for (const name of ['keep-alive', 'proxy-connection', 'proxy-authenticate', 'upgrade', 'trailer', 'te']) t.equal(head[name], undefined, `${name} is dropped`)
  t.equal(head['x-origin'], undefined, 'a name the hook\'s Connection listed is dropped, as on the request side')
  t.ok(answer.text.endsWith('\r\n\r\norigin body'))
})

test('onSend on forwarded responses: a hook that replaces the body with a string or a stream gets framing that describes the new body, not the origin\'s Content-Length', async (t) => {
  const origin = await startOrigin(t, (_req, res) => { res.end('a longer body from the origin') })
  const proxy = await startProxy(t, {}, (app: FastifyInstance) => {
    app.addHook('onSend', async (request, _reply, payload) => {
      if (payload instanceof Readable) payload.resume()
      return request.url.endsWith('/stream') ? Readable.from(['replaced', ' by a stream']) : 'replaced'
    })
  })
  const asString = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/string HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(asString.status, 200)
  t.equal(headOf(asString.text)['content-length'], '8')
  t.ok(asString.text.endsWith('\r\n\r\nreplaced'))
  const asStream = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/stream HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(asStream.status, 200)
  t.equal(headOf(asStream.text)['content-length'], undefined)
  t.equal(headOf(asStream.text)['transfer-encoding'], 'chunked')
  // How the stream's two strings are cut into chunks is Node's affair (they may come as one).
  t.equal(chunkedBodyOf(asStream.text), 'replaced by a stream', 'the chunks hold the new body and end with the last chunk')
})

test('onSend inside an intercepted tunnel: the hook sees request.interception and its header arrives; hop-by-hop edits are dropped; a secret\'s value a hook puts in a header reaches the client as its placeholder, the other headers (Set-Cookie) once', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, (_req, res) => {
    res.setHeader('set-cookie', ['a=1', 'b=2'])
    res.end('ok')
  })
  const value = 'sk-onsend-4c1f9e7a2b8d'
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { secrets: [{ name: 'api', value, hosts: [`127.0.0.1:${origin.port}`], placeholder: 'PLACEHOLDER_ONSEND' }] },
    interception: interceptAll(pki),
    setup: (app: FastifyInstance) => {
      app.addHook('onSend', async (request, reply, payload) => {
        if (request.interception !== null) {
          reply.header('x-intercepted-host', request.interception.destination.host)
          reply.header('x-echo', `Bearer ${value}`)
          reply.header('keep-alive', 'timeout=1')
          reply.header('connection', 'x-dropped')
          reply.header('x-dropped', 'listed in the hook\'s Connection')
        }
        return payload
      })
    }
  })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  const response = await request(`https://127.0.0.1:${origin.port}/`, { dispatcher: agent })
  t.equal(await response.body.text(), 'ok')
  t.equal(response.headers['x-intercepted-host'], '127.0.0.1')
  t.equal(response.headers['x-echo'], 'Bearer PLACEHOLDER_ONSEND')
  t.same(response.headers['set-cookie'], ['a=1', 'b=2'], 'the destination\'s cookies once each after the scrub')
  t.not(response.headers['keep-alive'], 'timeout=1', 'Node\'s own Keep-Alive, not the hook\'s')
  t.equal(response.headers['x-dropped'], undefined)
  t.not(response.headers.connection, 'x-dropped')
  // HTTP/2 inside the tunnel: Node refuses to send a connection-specific field at all, so a
  // hook's Keep-Alive that reached it would fail the response.
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  const session = await http2OverTls(t, socket, target)
  const h2 = await http2Request(session, { ':path': '/h2', ':authority': target })
  t.equal(h2.status, 200)
  t.equal(h2.body, 'ok')
  t.equal(h2.headers['x-intercepted-host'], '127.0.0.1')
  t.equal(h2.headers['x-echo'], 'Bearer PLACEHOLDER_ONSEND')
  t.equal(h2.headers['keep-alive'], undefined)
  t.equal(h2.headers['x-dropped'], undefined)
})

test('onSend on the proxy\'s own answers (an error, the application\'s routes) is left as the application wrote it', async (t) => {
  const proxy = await startProxy(t, { destinations: { allowedHosts: ['allowed.example'] } }, (app: FastifyInstance) => {
    app.get('/own', async () => 'own route')
    app.addHook('onSend', async (_request, reply, payload) => {
      reply.header('x-app', 'added')
      return payload
    })
  })
  const refused = await rawExchange(proxy.port, 'GET http://denied.example/ HTTP/1.1\r\nHost: denied.example\r\nConnection: close\r\n\r\n')
  t.equal(refused.status, 403)
  t.equal(headOf(refused.text)['x-app'], 'added')
  const own = await rawExchange(proxy.port, 'GET /own HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
  t.equal(own.status, 200)
  t.equal(headOf(own.text)['x-app'], 'added')
})
