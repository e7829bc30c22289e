import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki } from './helpers/interception-pki'
import { expectHeldBack, HUNDRED_MIB, randomBody, READ_BEFORE_STALL, startLargeBodyOrigin, type ReceivedUpload } from './helpers/large-body'
import { startMemoryProbedProxy, type MemoryGrowth } from './helpers/memory-probed-proxy'
import { settled } from './helpers/settled'

// Why this fails for real if the proxy buffered the body: midway the origin stops reading.
// A streaming proxy stops reading the client once the buffers on the way are full, so the
// client, whose random bytes are made only when undici asks for more, stalls a bounded
// distance ahead of the origin. A proxy that read the whole request body before sending it
// (or ignored backpressure anywhere) would drain the client to the end: close to 100 MiB
// ahead, held in the proxy's memory. The proxy runs in a child process of its own, so its
// memory is measured apart from the client and origin here, while the transfer is stalled.

test('a 100 MiB upload through an intercepted tunnel arrives byte-exact (SHA-256 at both ends); with the origin not reading, the client is held back and the proxy holds no body', { timeout: 30_000 }, async (t) => {
  const pki = await makeInterceptionPki(t)
  const body = randomBody(HUNDRED_MIB)
  let stall: { produced: number, read: number, whileStalled: MemoryGrowth } | undefined
  let measureStalled: (read: number) => Promise<void> = async () => {}
  const originPort = await startLargeBodyOrigin(t, pki, {
    upload: { pauseAfter: READ_BEFORE_STALL, whilePaused: (read) => measureStalled(read) }
  })
  const proxy = await startMemoryProbedProxy(t, pki)
  measureStalled = async (read) => {
    // Nothing moves once every buffer between client and origin is full: wait for that.
    const produced = await settled(() => body.produced(), 300, 10_000)
    stall = { produced, read, whileStalled: await proxy.measure() }
  }
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  await proxy.baseline()

  const started = performance.now()
  const response = await request(`https://127.0.0.1:${originPort}/upload`, {
    dispatcher: agent,
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', 'content-length': String(HUNDRED_MIB) },
    body: body.stream
  })
  t.equal(response.statusCode, 200)
  const received = await response.body.json() as ReceivedUpload
  const seconds = (performance.now() - started) / 1000
  const afterwards = await proxy.measure()

  t.equal(received.bytes, HUNDRED_MIB, 'every byte arrived')
  t.equal(received.sha256, body.digest(), 'the same bytes in the same order (SHA-256 of what the client sent)')
  if (stall === undefined) throw new Error('the origin never paused')
  expectHeldBack(t, { sender: 'client', reader: 'origin', ...stall, afterwards, seconds })
})
