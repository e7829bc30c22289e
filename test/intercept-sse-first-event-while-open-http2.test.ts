import type { ServerResponse } from 'node:http'
import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { http2OverTls, openInterceptedTls } from './helpers/intercepted-client'

test('through an intercepted tunnel spoken as HTTP/2 inside, the first server-sent event reaches the client while the origin still holds the stream open; the second follows once the origin is let go', { timeout: 15_000 }, async (t) => {
  const pki = await makeInterceptionPki(t)
  // Who did what, in the order it happened: the assertion is on this order, never on time.
  const order: string[] = []
  let letOriginGo: () => void = () => {}
  const originLetGo = new Promise<void>((resolve) => { letOriginGo = resolve })
  let stream: ServerResponse | undefined
  const origin = await startTlsOrigin(t, pki, (_req, res) => {
    stream = res
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    res.write('id: 1\ndata: first\n\n')
    order.push('origin wrote the first event')
    // Held open until the client has the first event: a proxy that waited for the end would deadlock.
    void originLetGo.then(() => {
      order.push('origin let go')
      res.end('id: 2\ndata: second\n\n')
    })
  })
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true } }
  })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, alpn: ['h2'] })
  t.equal(socket.alpnProtocol, 'h2')
  const session = await http2OverTls(t, socket, target)

  const events = session.request({ ':path': '/events', ':authority': target, accept: 'text/event-stream' })
  const head = await new Promise<Record<string, unknown>>((resolve, reject) => {
    events.once('response', resolve)
    events.once('error', reject)
  })
  t.equal(head[':status'], 200)
  t.match(head['content-type'], /^text\/event-stream/)
  let text = ''
  let originOpenAtFirstEvent: boolean | undefined
  for await (const chunk of events) {
    text += (chunk as Buffer).toString()
    if (originOpenAtFirstEvent === undefined && text.includes('data: first\n\n')) {
      originOpenAtFirstEvent = stream !== undefined && !stream.writableEnded
      order.push('client got the first event')
      letOriginGo()
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
