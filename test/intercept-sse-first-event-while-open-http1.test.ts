import type { ServerResponse } from 'node:http'
import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'

test('through an intercepted tunnel (HTTP/1.1 inside, undici ProxyAgent) the first server-sent event reaches the client while the origin still holds the stream open; the second follows once the origin is let go', { timeout: 15_000 }, async (t) => {
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
    // The origin holds the stream open until the test says so, which it does only once the
    // client has the first event: a proxy that waited for the end would deadlock here.
    void originLetGo.then(() => {
      order.push('origin let go')
      res.end('id: 2\ndata: second\n\n')
    })
  })
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true } }
  })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())

  const response = await request(`https://127.0.0.1:${origin.port}/events`, { dispatcher: agent, headers: { accept: 'text/event-stream' } })
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^text\/event-stream/)
  let text = ''
  let originOpenAtFirstEvent: boolean | undefined
  for await (const chunk of response.body) {
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
