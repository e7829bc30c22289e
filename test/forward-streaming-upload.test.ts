import { test } from 'tap'
import type { AddressInfo } from 'node:net'
import { createServer as createHttpServer } from 'node:http'
import { createHash } from 'node:crypto'
import { request, ProxyAgent } from 'undici'
import { Readable } from 'node:stream'
import { startProxy } from './helpers/servers'

const MiB = 1024 * 1024
const TOTAL = 20 * MiB

/** Fails instead of hanging when the awaited step never happens (it would if the proxy buffered). */
function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const guard = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms) })
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer))
}

test('bodies: a 20 MiB upload streams; the origin receives bytes before the client has sent the rest', async (t) => {
  let signalFirstBytes: () => void = () => {}
  const originGotFirstBytes = new Promise<void>((resolve) => { signalFirstBytes = resolve })
  const origin = createHttpServer((req, res) => {
    const hash = createHash('sha256')
    let received = 0
    req.on('data', (chunk: Buffer) => { received += chunk.length; hash.update(chunk); signalFirstBytes() })
    req.on('end', () => res.end(JSON.stringify({ received, sha256: hash.digest('hex') })))
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  const originPort = (origin.address() as AddressInfo).port
  const proxy = await startProxy(t)
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())

  const sent = createHash('sha256')
  async function * body (): AsyncGenerator<Buffer> {
    const first = Buffer.alloc(MiB, 1)
    sent.update(first)
    yield first
    // Nothing more is sent until the origin has bytes: a buffering proxy deadlocks here.
    await within(originGotFirstBytes, 10_000, 'the origin receiving the first upload bytes')
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
