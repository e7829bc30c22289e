import { test } from 'tap'
import type { ServerResponse } from 'node:http'
import { request, ProxyAgent } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'

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

test('an event stream idle longer than httpActivityTimeout survives; a normal body is cut', async (t) => {
  let releaseEvents: () => void = () => {}
  const eventsReleased = new Promise<void>((resolve) => { releaseEvents = resolve })
  const origin = await startOrigin(t, (req, res) => {
    if (req.url === '/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      res.write('data: one\n\n')
      eventsReleased.then(() => res.end('data: two\n\n'), () => {})
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('stalling-')
    }
  })
  const proxy = await startProxy(t, { limits: { httpActivityTimeout: 300, tunnelIdleTimeout: 5000 } })
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())

  const events = await request(`http://127.0.0.1:${origin.port}/events`, { dispatcher: agent })
  let firstEvent: () => void = () => {}
  const gotFirstEvent = new Promise<void>((resolve) => { firstEvent = resolve })
  const eventBody = drain(events.body, (text) => { if (text.includes('one')) firstEvent() })
  await gotFirstEvent
  // The event stream is now idle. A normal body stalling for the same time must be cut; only
  // once that has happened is the stream's next event sent, so it was idle past the limit.
  const normal = await request(`http://127.0.0.1:${origin.port}/stall`, { dispatcher: agent })
  const normalBody = await drain(normal.body)
  t.same(normalBody, { text: 'stalling-', clean: false }, 'a normal body that stalls past httpActivityTimeout is cut')
  releaseEvents()
  t.same(await eventBody, { text: 'data: one\n\ndata: two\n\n', clean: true }, 'the event stream is governed by tunnelIdleTimeout')
})

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
