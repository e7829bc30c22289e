import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import type { ForwardProxyCaptureEntry } from '../lib/index'
import { runExample } from './helpers/example-process'
import { harValidationErrors } from './helpers/har-validator'
import { basic } from './helpers/raw-client'
import { startOrigin } from './helpers/servers'

/** What GET /captures answers: a HAR document of the last entries. */
interface Captures {
  log: { entries: ForwardProxyCaptureEntry[], _dropped: number }
}

/** GET /captures on the example's port, until its newest entry is for `path` (entries are built just after each response). */
async function captures (port: number, path: string): Promise<Captures> {
  const deadline = Date.now() + 5000
  for (;;) {
    const answer = await request(`http://127.0.0.1:${port}/captures`)
    const body = await answer.body.json() as Captures
    const newest = body.log.entries.at(-1)
    if ((newest !== undefined && new URL(newest.request.url).pathname === path) || Date.now() > deadline) return body
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('examples/capture-viewer.ts: run for real, GET /captures serves the requests sent through the proxy as a valid HAR, the last 100 only, without the proxy credentials', { timeout: 30_000 }, async (t) => {
  const origin = await startOrigin(t, (_req, res) => {
    res.setHeader('content-type', 'text/plain')
    res.end('hello from the origin')
  })
  const { port } = await runExample(t, 'capture-viewer.ts', { PROXY_PORT: '0', ALLOWED_NETWORKS: '127.0.0.1/32', ALLOWED_PORTS: String(origin.port) })
  const agent = new ProxyAgent({ uri: `http://127.0.0.1:${port}`, proxyTunnel: false, token: basic('alice', 's3cret') })
  t.teardown(() => agent.close())

  const first = await request(`http://127.0.0.1:${origin.port}/first?x=1`, { dispatcher: agent, headers: { authorization: 'Bearer client-token' } })
  t.equal(first.statusCode, 200)
  t.equal(await first.body.text(), 'hello from the origin')

  const one = await captures(port, '/first')
  t.same(await harValidationErrors(one), [], 'har-validator accepts what /captures answers')
  t.equal(one.log.entries.length, 1, 'one entry: the request sent through the proxy (GET /captures itself is the app\'s, not recorded)')
  const entry = one.log.entries[0]
  t.equal(entry?.request.url, `http://127.0.0.1:${origin.port}/first?x=1`)
  t.equal(entry?.response.status, 200)
  t.equal(entry?.response.content.text, 'hello from the origin')
  t.equal(entry?._user, 'alice')
  t.equal(entry?.request.headers.find((pair) => pair.name.toLowerCase() === 'authorization')?.value, '[redacted]')
  const text = JSON.stringify(one)
  t.notOk(/proxy-authorization/i.test(text) || text.includes(basic('alice', 's3cret').slice('Basic '.length)), 'no proxy credential in the entries')

  for (let i = 0; i < 101; i++) {
    const answer = await request(`http://127.0.0.1:${origin.port}/n${i}`, { dispatcher: agent })
    await answer.body.text()
  }
  const settled = await captures(port, '/n100')
  t.equal(settled.log.entries.length, 100, 'the ring buffer keeps 100 entries')
  t.same(settled.log.entries.map((item) => new URL(item.request.url).pathname), Array.from({ length: 100 }, (_, i) => `/n${i + 1}`), 'the last 100, oldest first')
  t.equal(settled.log._dropped, 0)
})
