import { test } from 'tap'
import type { AddressInfo } from 'node:net'
import { createServer } from 'node:http'
import { createHash } from 'node:crypto'
import { request, ProxyAgent } from 'undici'
import { startProxy } from './helpers/servers'

const MiB = 1024 * 1024
const TOTAL = 20 * MiB

/** Fails instead of hanging when the awaited step never happens (it would if the proxy buffered). */
function within<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const guard = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms) })
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer))
}

test('bodies: a 20 MiB download streams; the client receives bytes before the origin has sent the rest', async (t) => {
  let acknowledge: () => void = () => {}
  const clientGotFirstBytes = new Promise<void>((resolve) => { acknowledge = resolve })
  const sent = createHash('sha256')
  const origin = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(TOTAL) })
    const first = Buffer.alloc(MiB, 7)
    sent.update(first)
    res.write(first)
    // The rest waits for the client: a proxy that buffers the whole response deadlocks here.
    within(clientGotFirstBytes, 10_000, 'the client receiving the first download bytes').then(async () => {
      for (let i = 1; i < TOTAL / MiB; i++) {
        const chunk = Buffer.alloc(MiB, i % 251)
        sent.update(chunk)
        if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve))
      }
      res.end()
    }, () => res.destroy())
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  const originPort = (origin.address() as AddressInfo).port
  const proxy = await startProxy(t)
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false })
  t.teardown(() => agent.close())

  const res = await request(`http://127.0.0.1:${originPort}/download`, { dispatcher: agent })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-length'], String(TOTAL))
  const received = createHash('sha256')
  let length = 0
  for await (const chunk of res.body) {
    length += (chunk as Buffer).length
    received.update(chunk as Buffer)
    acknowledge()
  }
  t.equal(length, TOTAL)
  t.equal(received.digest('hex'), sent.digest('hex'), 'every byte arrived in order')
})
