import { createHash } from 'node:crypto'
import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki } from './helpers/interception-pki'
import { expectHeldBack, HUNDRED_MIB, randomBody, READ_BEFORE_STALL, startLargeBodyOrigin } from './helpers/large-body'
import { startMemoryProbedProxy } from './helpers/memory-probed-proxy'
import { settled } from './helpers/settled'
import { deferred } from './helpers/deferred'

// Why this fails for real if the proxy buffered the body: midway the client stops reading.
// A streaming proxy stops reading the origin once the buffers on the way are full, so the
// origin, which makes its random bytes only when asked for more, stalls a bounded distance
// ahead of the client. A proxy that read the whole body before (or while) sending it, or that
// ignored backpressure anywhere, would drain the origin to the end: close to 100 MiB ahead,
// and held in the proxy's memory. The proxy runs in a child process of its own, so its memory
// is measured apart from the client and origin here, while the transfer is stalled.

test('a 100 MiB download through an intercepted tunnel arrives byte-exact (SHA-256 at both ends); with the client not reading, the origin is held back and the proxy holds no body', { timeout: 30_000 }, async (t) => {
  const pki = await makeInterceptionPki(t)
  const body = randomBody(HUNDRED_MIB)
  const originPort = await startLargeBodyOrigin(t, pki, { download: { body, size: HUNDRED_MIB } })
  const proxy = await startMemoryProbedProxy(t, pki)
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  await proxy.baseline()

  const started = performance.now()
  const response = await request(`https://127.0.0.1:${originPort}/download`, { dispatcher: agent })
  t.equal(response.statusCode, 200)
  t.equal(response.headers['content-length'], String(HUNDRED_MIB))
  const received = createHash('sha256')
  let bytes = 0
  let stallPending = true
  const stallPoint = deferred()
  const ended = new Promise<void>((resolve, reject) => {
    response.body.on('end', resolve)
    response.body.on('error', reject)
  })
  response.body.on('data', (chunk: Buffer) => {
    received.update(chunk)
    bytes += chunk.length
    if (stallPending && bytes >= READ_BEFORE_STALL) {
      stallPending = false
      response.body.pause()
      stallPoint.resolve()
    }
  })

  await stallPoint.promise
  // Nothing moves once every buffer between origin and client is full: wait for that.
  const produced = await settled(() => body.produced(), 300, 10_000)
  const stalledAt = bytes
  const whileStalled = await proxy.measure()
  response.body.resume()
  await ended
  const seconds = (performance.now() - started) / 1000
  const afterwards = await proxy.measure()

  t.equal(bytes, HUNDRED_MIB, 'every byte arrived')
  t.equal(received.digest('hex'), body.digest(), 'the same bytes in the same order (SHA-256 of what the origin sent)')
  expectHeldBack(t, { sender: 'origin', reader: 'client', read: stalledAt, produced, whileStalled, afterwards, seconds })
})
