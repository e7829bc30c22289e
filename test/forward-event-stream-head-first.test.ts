import { test, type Test } from 'tap'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { request, ProxyAgent, type Dispatcher } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { deferred } from './helpers/deferred'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

const paths: Array<{ name: string, start: (t: Test, handler: Handler) => Promise<{ url: string, agent: Dispatcher }> }> = [
  {
    name: 'http:// forwarding',
    start: async (t, handler) => {
      const origin = await startOrigin(t, handler)
      const proxy = await startProxy(t)
      const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
      t.teardown(() => agent.close())
      return { url: `http://127.0.0.1:${origin.port}/events`, agent }
    }
  },
  {
    name: 'inside an intercepted tunnel',
    start: async (t, handler) => {
      const pki = await makeInterceptionPki(t)
      const origin = await startTlsOrigin(t, pki, handler)
      const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
      const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
      t.teardown(() => agent.close())
      return { url: `https://127.0.0.1:${origin.port}/events`, agent }
    }
  }
]

for (const { name, start } of paths) {
  test(`${name}: an event stream's head reaches the client as soon as the destination sends it, before its first event (EventSource opens on the head)`, async (t) => {
    const headArrived = deferred()
    const { url, agent } = await start(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      res.flushHeaders()
      // The first event is sent only once the client has the head.
      void headArrived.promise.then(() => res.end('data: first\n\n'))
    })
    const answer = await request(url, { dispatcher: agent })
    headArrived.resolve()
    t.equal(answer.statusCode, 200)
    t.match(answer.headers['content-type'], /^text\/event-stream/)
    t.equal(await answer.body.text(), 'data: first\n\n')
  })
}
