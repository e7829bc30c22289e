import { createHash } from 'node:crypto'
import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki } from './helpers/interception-pki'
import { HUNDRED_MIB, mib, randomBody, startLargeBodyOrigin } from './helpers/large-body'
import { startMemoryProbedProxy } from './helpers/memory-probed-proxy'
import { settled } from './helpers/settled'

// Why this fails for real if the proxy buffered the body: midway the client stops reading.
// A streaming proxy stops reading the origin once the buffers on the way are full, so the
// origin, which makes its random bytes only when asked for more, stalls a bounded distance
// ahead of the client. A proxy that read the whole body before (or while) sending it, or that
// ignored backpressure anywhere, would drain the origin to the end: close to 100 MiB ahead,
// and held in the proxy's memory. The proxy runs in a child process of its own, so its memory
// is measured apart from the client and origin here, while the transfer is stalled.
const READ_BEFORE_STALL = 16 * 1024 * 1024
// Measured 10 to 19 MiB ahead, nearly all of it in the kernel's socket buffers, which Linux
// autotunes per connection (up to net.ipv4.tcp_rmem's maximum, 32 MiB where this was measured); the
// bound leaves room for that and is still far below the ~84 MiB a buffering proxy would allow.
const MAX_IN_FLIGHT = 56 * 1024 * 1024
const MAX_PROXY_BUFFERS = 16 * 1024 * 1024
// Measured 43 to 69 MiB (TLS records, GC heap slack and allocator arenas under load); a proxy that
// held the body would grow by at least its 100 MiB.
const MAX_PEAK_RSS_GROWTH = 90 * 1024 * 1024

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
  let reachedStallPoint: () => void = () => {}
  const stallPoint = new Promise<void>((resolve) => { reachedStallPoint = resolve })
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
      reachedStallPoint()
    }
  })

  await stallPoint
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
  t.comment(`client stalled after ${mib(stalledAt)}; origin had produced ${mib(produced)}, ${mib(produced - stalledAt)} ahead; ` +
    `proxy growth while stalled: Buffers ${mib(whileStalled.arrayBuffers)}, heap ${mib(whileStalled.heapUsed)}; ` +
    `peak RSS growth over the transfer ${mib(afterwards.maxRss)} (baseline peak ${mib(afterwards.baselineMaxRss)}); ${seconds.toFixed(2)} s`)
  t.ok(produced - stalledAt < MAX_IN_FLIGHT, `the origin was held back: ${mib(produced - stalledAt)} ahead of the client (bound ${mib(MAX_IN_FLIGHT)})`)
  t.ok(whileStalled.arrayBuffers < MAX_PROXY_BUFFERS, `the stalled proxy holds ${mib(whileStalled.arrayBuffers)} more Buffers than before (bound ${mib(MAX_PROXY_BUFFERS)})`)
  t.ok(afterwards.maxRss < MAX_PEAK_RSS_GROWTH, `the proxy's peak RSS grew by ${mib(afterwards.maxRss)} over the whole transfer (bound ${mib(MAX_PEAK_RSS_GROWTH)})`)
})
