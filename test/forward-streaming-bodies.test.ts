import { test, type Test } from 'tap'
import type { AddressInfo } from 'node:net'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { request, ProxyAgent } from 'undici'
import { startProxy } from './helpers/servers'
import { deferred } from './helpers/deferred'
import { within } from './helpers/within'

const MiB = 1024 * 1024
const TOTAL = 20 * MiB

/**
 * An HTTP origin whose `handler` gets each request as it streams in, and an undici agent that
 * sends http:// requests through the proxy (no tunnel). Both closed at teardown.
 */
async function originBehindProxy (t: Test, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ originPort: number, agent: ProxyAgent }> {
  const origin = createServer(handler)
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  const proxy = await startProxy(t)
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())
  return { originPort: (origin.address() as AddressInfo).port, agent }
}

test('bodies: a 20 MiB download streams; the client receives bytes before the origin has sent the rest', async (t) => {
  const clientGotFirstBytes = deferred()
  const sent = createHash('sha256')
  const { originPort, agent } = await originBehindProxy(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(TOTAL) })
    const first = Buffer.alloc(MiB, 7)
    sent.update(first)
    res.write(first)
    // The rest waits for the client: a proxy that buffers the whole response deadlocks here.
    within(clientGotFirstBytes.promise, 'the client receiving the first download bytes').then(async () => {
      for (let i = 1; i < TOTAL / MiB; i++) {
        const chunk = Buffer.alloc(MiB, i % 251)
        sent.update(chunk)
        if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve))
      }
      res.end()
    }, () => res.destroy())
  })

  const res = await request(`http://127.0.0.1:${originPort}/download`, { dispatcher: agent })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-length'], String(TOTAL))
  const received = createHash('sha256')
  let length = 0
  for await (const chunk of res.body) {
    length += (chunk as Buffer).length
    received.update(chunk as Buffer)
    clientGotFirstBytes.resolve()
  }
  t.equal(length, TOTAL)
  t.equal(received.digest('hex'), sent.digest('hex'), 'every byte arrived in order')
})

test('bodies: a 20 MiB upload streams; the origin receives bytes before the client has sent the rest', async (t) => {
  const originGotFirstBytes = deferred()
  const { originPort, agent } = await originBehindProxy(t, (req, res) => {
    const hash = createHash('sha256')
    let received = 0
    req.on('data', (chunk: Buffer) => { received += chunk.length; hash.update(chunk); originGotFirstBytes.resolve() })
    req.on('end', () => res.end(JSON.stringify({ received, sha256: hash.digest('hex') })))
  })

  const sent = createHash('sha256')
  async function * body (): AsyncGenerator<Buffer> {
    const first = Buffer.alloc(MiB, 1)
    sent.update(first)
    yield first
    // Nothing more is sent until the origin has bytes: a buffering proxy deadlocks here.
    await within(originGotFirstBytes.promise, 'the origin receiving the first upload bytes')
    for (let i = 1; i < TOTAL / MiB; i++) {
      const chunk = Buffer.alloc(MiB, i % 251)
      sent.update(chunk)
      yield chunk
    }
  }

  const res = await request(`http://127.0.0.1:${originPort}/upload`, {
    dispatcher: agent,
    method: 'POST',
    headers: { 'content-length': String(TOTAL), 'content-type': 'application/octet-stream' },
    body: Readable.from(body())
  })
  t.equal(res.statusCode, 200)
  t.same(await res.body.json(), { received: TOTAL, sha256: sent.digest('hex') }, 'every byte arrived in order')
})
