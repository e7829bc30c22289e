import type { ServerResponse } from 'node:http'
import { test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll, type InterceptingProxy } from './helpers/intercepting-proxy'
import { http2OverTls, openInterceptedTls } from './helpers/intercepted-client'
import { deferred } from './helpers/deferred'

/** The response to `GET /events` on `target`, sent through `proxy`: status, content type and the body as it streams. */
interface EventStream {
  status: unknown
  contentType: unknown
  body: AsyncIterable<unknown>
}

const clients: Array<{ inside: string, get: (t: Test, proxy: InterceptingProxy, pki: InterceptionPki, target: string) => Promise<EventStream> }> = [
  {
    inside: 'HTTP/1.1 inside, undici ProxyAgent',
    get: async (t, proxy, pki, target) => {
      const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
      t.teardown(() => agent.close())
      const response = await request(`https://${target}/events`, { dispatcher: agent, headers: { accept: 'text/event-stream' } })
      return { status: response.statusCode, contentType: response.headers['content-type'], body: response.body }
    }
  },
  {
    inside: 'HTTP/2 inside',
    get: async (t, proxy, pki, target) => {
      const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
      t.equal(socket.alpnProtocol, 'h2')
      const session = await http2OverTls(t, socket, target)
      const events = session.request({ ':path': '/events', ':authority': target, accept: 'text/event-stream' })
      const head = await new Promise<Record<string, unknown>>((resolve, reject) => {
        events.once('response', resolve)
        events.once('error', reject)
      })
      return { status: head[':status'], contentType: head['content-type'], body: events }
    }
  }
]

for (const { inside, get } of clients) {
  test(`through an intercepted tunnel (${inside}) the first server-sent event reaches the client while the origin still holds the stream open; the second follows once the origin is let go`, { timeout: 15_000 }, async (t) => {
    const pki = await makeInterceptionPki(t)
    // Who did what, in the order it happened: the assertion is on this order, never on time.
    const order: string[] = []
    const originLetGo = deferred()
    let stream: ServerResponse | undefined
    const origin = await startTlsOrigin(t, pki, (_req, res) => {
      stream = res
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      res.write('id: 1\ndata: first\n\n')
      order.push('origin wrote the first event')
      // The origin holds the stream open until the test says so, which it does only once the
      // client has the first event: a proxy that waited for the end would deadlock here.
      void originLetGo.promise.then(() => {
        order.push('origin let go')
        res.end('id: 2\ndata: second\n\n')
      })
    })
    const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })

    const response = await get(t, proxy, pki, `127.0.0.1:${origin.port}`)
    t.equal(response.status, 200)
    t.match(response.contentType, /^text\/event-stream/)
    let text = ''
    let originOpenAtFirstEvent: boolean | undefined
    for await (const chunk of response.body) {
      text += (chunk as Buffer).toString()
      if (originOpenAtFirstEvent === undefined && text.includes('data: first\n\n')) {
        originOpenAtFirstEvent = stream !== undefined && !stream.writableEnded
        order.push('client got the first event')
        originLetGo.resolve()
      }
      if (text.includes('data: second\n\n') && !order.includes('client got the second event')) order.push('client got the second event')
    }
    order.push('client saw the end')

    t.equal(originOpenAtFirstEvent, true, 'the origin had not ended its response when the first event arrived')
    t.same(order, [
      'origin wrote the first event',
      'client got the first event',
      'origin let go',
      'client got the second event',
      'client saw the end'
    ])
    t.equal(text, 'id: 1\ndata: first\n\nid: 2\ndata: second\n\n', 'both events, byte for byte')
  })
}
