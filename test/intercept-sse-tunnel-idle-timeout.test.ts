import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'

/** Reads a body to its end; resolves with what arrived and whether it ended cleanly. */
async function drain (body: AsyncIterable<Buffer | string>, onChunk: (text: string) => void = () => {}): Promise<{ text: string, clean: boolean }> {
  let text = ''
  try {
    for await (const chunk of body) { text += chunk.toString(); onChunk(text) }
    return { text, clean: true }
  } catch {
    return { text, clean: false }
  }
}

test('inside an intercepted tunnel a text/event-stream response idle longer than httpActivityTimeout (200 ms) survives under tunnelIdleTimeout, while a normal body idle as long is cut', { timeout: 15_000 }, async (t) => {
  const pki = await makeInterceptionPki(t)
  let releaseEvents: () => void = () => {}
  const eventsReleased = new Promise<void>((resolve) => { releaseEvents = resolve })
  const origin = await startTlsOrigin(t, pki, (req, res) => {
    if (req.url === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
      res.write('data: one\n\n')
      void eventsReleased.then(() => res.end('data: two\n\n'))
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('stalling-')
    }
  })
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { limits: { httpActivityTimeout: 200, tunnelIdleTimeout: 10_000 } },
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true } }
  })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())

  const events = await request(`https://127.0.0.1:${origin.port}/events`, { dispatcher: agent })
  let firstEvent: () => void = () => {}
  const gotFirstEvent = new Promise<void>((resolve) => { firstEvent = resolve })
  const eventBody = drain(events.body, (text) => { if (text.includes('data: one\n\n')) firstEvent() })
  await gotFirstEvent

  // The origin now pauses the event stream; that pause is the scenario. Its length is set by
  // events, not a sleep: a normal body, requested through another intercepted tunnel after the
  // pause began, stalls until the proxy cuts it for httpActivityTimeout, and only then is the
  // next event sent. So the event stream was idle for longer than httpActivityTimeout.
  const normal = await request(`https://127.0.0.1:${origin.port}/stall`, { dispatcher: agent })
  t.equal(normal.statusCode, 200)
  t.same(await drain(normal.body), { text: 'stalling-', clean: false }, 'a normal body idle past httpActivityTimeout inside the tunnel is cut')
  releaseEvents()
  t.same(await eventBody, { text: 'data: one\n\ndata: two\n\n', clean: true }, 'the event stream, idle as long, is governed by tunnelIdleTimeout and ends cleanly')
  t.same(origin.requests.map((seen) => seen.url), ['/events', '/stall'])
})
