import { test, type Test } from 'tap'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { request, ProxyAgent } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { deferred } from './helpers/deferred'

/** Reads a response body to its end; resolves with what arrived and whether it ended cleanly. */
async function drain (body: AsyncIterable<Buffer | string>, onChunk: (text: string) => void = () => {}): Promise<{ text: string, clean: boolean }> {
  let text = ''
  try {
    for await (const chunk of body) { text += chunk.toString(); onChunk(text) }
    return { text, clean: true }
  } catch {
    return { text, clean: false }
  }
}

/** An origin reached through the proxy: its URL, an agent that goes through the proxy, the requests it saw. */
interface Through { base: string, agent: ProxyAgent, requests: Array<{ url: string }> }
type Handler = (req: IncomingMessage, res: ServerResponse) => void
interface Limits { httpActivityTimeout: number, tunnelIdleTimeout: number }

const paths: Array<{ name: string, eventType: string, start: (t: Test, limits: Limits, handler: Handler) => Promise<Through> }> = [
  {
    name: 'http:// forwarding',
    eventType: 'text/event-stream',
    start: async (t, limits, handler) => {
      const origin = await startOrigin(t, handler)
      const proxy = await startProxy(t, { limits })
      const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
      t.teardown(() => agent.close())
      return { base: `http://127.0.0.1:${origin.port}`, agent, requests: origin.requests }
    }
  },
  {
    name: 'inside an intercepted tunnel',
    eventType: 'text/event-stream; charset=utf-8',
    start: async (t, limits, handler) => {
      const pki = await makeInterceptionPki(t)
      const origin = await startTlsOrigin(t, pki, handler)
      const proxy = await startInterceptingProxy(t, pki, {
        proxy: { limits },
        interception: interceptAll(pki)
      })
      const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
      t.teardown(() => agent.close())
      return { base: `https://127.0.0.1:${origin.port}`, agent, requests: origin.requests }
    }
  }
]

for (const { name, eventType, start } of paths) {
  test(`${name}: an event stream idle longer than httpActivityTimeout survives under tunnelIdleTimeout, while a normal body idle as long is cut`, { timeout: 15_000 }, async (t) => {
    const eventsReleased = deferred()
    const { base, agent, requests } = await start(t, { httpActivityTimeout: 300, tunnelIdleTimeout: 10_000 }, (req, res) => {
      if (req.url === '/events') {
        res.writeHead(200, { 'content-type': eventType, 'cache-control': 'no-cache' })
        res.write('data: one\n\n')
        void eventsReleased.promise.then(() => res.end('data: two\n\n'))
      } else {
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.write('stalling-')
      }
    })

    const events = await request(`${base}/events`, { dispatcher: agent })
    const gotFirstEvent = deferred()
    const eventBody = drain(events.body, (text) => { if (text.includes('data: one\n\n')) gotFirstEvent.resolve() })
    await gotFirstEvent.promise

    // The origin now pauses the event stream; that pause is the scenario. Its length is set by
    // events, not a sleep: a normal body, requested after the pause began, stalls until the proxy
    // cuts it for httpActivityTimeout, and only then is the next event sent. So the event stream
    // was idle for longer than httpActivityTimeout.
    const normal = await request(`${base}/stall`, { dispatcher: agent })
    t.equal(normal.statusCode, 200)
    t.same(await drain(normal.body), { text: 'stalling-', clean: false }, 'a normal body that stalls past httpActivityTimeout is cut')
    eventsReleased.resolve()
    t.same(await eventBody, { text: 'data: one\n\ndata: two\n\n', clean: true }, 'the event stream, idle as long, is governed by tunnelIdleTimeout and ends cleanly')
    t.same(requests.map((seen) => seen.url), ['/events', '/stall'])
  })
}

test('events every 100 ms keep flowing well past httpActivityTimeout', async (t) => {
  const origin = await startOrigin(t, (_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    let sent = 0
    const timer = setInterval(() => {
      sent++
      if (sent === 8) { clearInterval(timer); res.end(`data: ${sent}\n\n`) } else res.write(`data: ${sent}\n\n`)
    }, 100)
    res.on('close', () => clearInterval(timer))
  })
  const proxy = await startProxy(t, { limits: { httpActivityTimeout: 300, tunnelIdleTimeout: 5000 } })
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())
  const started = Date.now()
  const res = await request(`http://127.0.0.1:${origin.port}/events`, { dispatcher: agent })
  const { text, clean } = await drain(res.body)
  t.ok(clean, 'ended cleanly')
  t.equal(text.match(/data: \d/g)?.length, 8, 'all 8 events arrived')
  t.ok(Date.now() - started >= 600, 'the stream lasted past 2 x httpActivityTimeout')
})

test('an event stream idle longer than tunnelIdleTimeout is cut', async (t) => {
  const origin = await startOrigin(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' })
    res.write('data: only\n\n')
  })
  const proxy = await startProxy(t, { limits: { httpActivityTimeout: 5000, tunnelIdleTimeout: 300 } })
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())
  const res = await request(`http://127.0.0.1:${origin.port}/events`, { dispatcher: agent })
  t.same(await drain(res.body), { text: 'data: only\n\n', clean: false })
})
