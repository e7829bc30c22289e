// A child process that runs only an intercepting proxy and measures its own memory, so a test
// can see what the proxy holds while a large body passes, apart from the client and origin in
// the test process. Started by memory-probed-proxy.ts with `--expose-gc`; talks over IPC.
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { forwardProxy, tlsInterception } from '../../lib/index'
import { LOOPBACK_TEST_POLICY } from './servers'
import type { ChildReply, ChildRequest, MemoryGrowth } from './memory-probed-proxy'

const exposedGc = (globalThis as { gc?: () => void }).gc
if (exposedGc === undefined) throw new Error('run with --expose-gc')
const gc = exposedGc

interface Reading {
  arrayBuffers: number
  heapUsed: number
}

/**
 * Memory still referenced now: the smallest of a few readings, each after a full GC and a turn
 * of the event loop (V8 frees ArrayBuffer backing stores on a concurrent sweeper, so a reading
 * right after one GC can still count dead Buffers; garbage differs between readings, retained
 * memory does not).
 */
async function retained (): Promise<Reading> {
  let best: Reading = { arrayBuffers: Infinity, heapUsed: Infinity }
  for (let i = 0; i < 5; i++) {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
    gc()
    const now = process.memoryUsage()
    best = { arrayBuffers: Math.min(best.arrayBuffers, now.arrayBuffers), heapUsed: Math.min(best.heapUsed, now.heapUsed) }
  }
  return best
}

/** Peak resident set size of this process so far, in bytes (the kernel's high-water mark). */
function maxRss (): number {
  return process.resourceUsage().maxRSS * 1024
}

let baseline: Reading & { maxRss: number } = { arrayBuffers: 0, heapUsed: 0, maxRss: 0 }

async function handle (message: ChildRequest): Promise<ChildReply> {
  if (message.type === 'start') return { type: 'started', port: await start(message) }
  const now = await retained()
  if (message.type === 'baseline') {
    baseline = { ...now, maxRss: maxRss() }
    return { type: 'baseline-taken' }
  }
  const growth: MemoryGrowth = {
    arrayBuffers: now.arrayBuffers - baseline.arrayBuffers,
    heapUsed: now.heapUsed - baseline.heapUsed,
    maxRss: maxRss() - baseline.maxRss,
    baselineMaxRss: baseline.maxRss
  }
  return { type: 'growth', growth }
}

process.on('message', (message: ChildRequest) => {
  handle(message).then(
    (reply) => process.send?.(reply),
    (error: unknown) => process.send?.({ type: 'failed', message: String(error) } satisfies ChildReply)
  )
})
process.on('disconnect', () => process.exit(0))

async function start (message: Extract<ChildRequest, { type: 'start' }>): Promise<number> {
  const app = Fastify({ logger: false })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  const certificate = { cert: message.leafCert, key: message.leafKey }
  await app.register(tlsInterception, {
    trustedDestinationCa: message.destinationCa,
    certificateProvider: { getCertificate: () => certificate },
    selector: { shouldIntercept: () => true }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as AddressInfo).port
}
