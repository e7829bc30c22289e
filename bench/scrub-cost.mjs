// What scrubbing secret values out of responses costs: the same intercepted requests through one
// proxy process to two HTTPS origins, one a secret is granted to (its responses are searched)
// and one without secrets (not searched), in alternating rounds of the same run. Small requests
// (18-byte body, 16 concurrent, keep-alive) and 64 MiB downloads; the proxy's CPU (user+system
// from /proc/PID/stat) per request and per MiB.
// `npm run build && node bench/scrub-cost.mjs` (BENCH_ROUNDS, BENCH_SECONDS, BENCH_LARGE_COUNT)
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ProxyAgent, request } from 'undici'
import { makeCa, makeLeaf } from './pki.mjs'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const LARGE_COUNT = Number(process.env.BENCH_LARGE_COUNT ?? 2)
const CONCURRENCY = 16
const LARGE_BYTES = 64 << 20
const SMALL_BODY = Buffer.from('eighteen bytes ok\n')
// Base64 text: the letters and symbols a scrubber must look at, never the value.
const LARGE_CHUNK = Buffer.from(Buffer.alloc(48 << 10, 0x5a).map((_, i) => (i * 7919) & 0xff).toString('base64'))

const dir = mkdtempSync(join(tmpdir(), 'ffp-scrub-bench-'))
const operatorCa = makeCa(dir, 'operator')
const destinationCa = makeCa(dir, 'destination')
const leaf = makeLeaf(dir, 'origin', destinationCa)

async function startOrigin () {
  const server = createServer({ cert: readFileSync(leaf.certPath), key: readFileSync(leaf.keyPath), keepAliveTimeout: 60_000 }, (req, res) => {
    if (req.url === '/large') {
      res.setHeader('content-length', String(LARGE_BYTES))
      let left = LARGE_BYTES
      const pump = () => {
        while (left > 0) {
          const chunk = left >= LARGE_CHUNK.length ? LARGE_CHUNK : LARGE_CHUNK.subarray(0, left)
          left -= chunk.length
          if (!res.write(chunk)) { res.once('drain', pump); return }
        }
        res.end()
      }
      pump()
      return
    }
    res.setHeader('content-length', String(SMALL_BODY.length))
    res.end(SMALL_BODY)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

function cpuMicros (pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  // utime and stime, in clock ticks (100 per second).
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

async function smallRound (agent, url) {
  let done = 0
  const until = Date.now() + SECONDS * 1000
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (Date.now() < until) {
      const response = await request(url, { dispatcher: agent })
      await response.body.arrayBuffer()
      done++
    }
  }))
  return done
}

async function largeRound (agent, url) {
  let bytes = 0
  for (let i = 0; i < LARGE_COUNT; i++) {
    const response = await request(url, { dispatcher: agent })
    for await (const chunk of response.body) bytes += chunk.length
  }
  return bytes
}

const secretOrigin = await startOrigin()
const plainOrigin = await startOrigin()
const secretHost = `127.0.0.1:${secretOrigin.address().port}`
const plainHost = `127.0.0.1:${plainOrigin.address().port}`
const proxy = spawn(process.execPath, [join(import.meta.dirname, 'intercepting-proxy-server.mjs'), operatorCa.certPath, operatorCa.keyPath, destinationCa.certPath], {
  env: { ...process.env, NODE_ENV: 'production', BENCH_SECRET_HOSTS: secretHost },
  stdio: ['ignore', 'pipe', 'inherit']
})
const port = Number(await new Promise((resolve) => proxy.stdout.once('data', (chunk) => resolve(String(chunk).trim()))))
const agent = new ProxyAgent({ uri: `http://127.0.0.1:${port}`, requestTls: { ca: readFileSync(operatorCa.certPath) }, connections: CONCURRENCY })

const results = { secret: { small: [], large: [] }, plain: { small: [], large: [] } }
const measure = async (kind, host, round) => {
  const before = cpuMicros(proxy.pid)
  const started = process.hrtime.bigint()
  const count = await round(agent, `https://${host}/${kind === 'small' ? 'small' : 'large'}`)
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  const cpu = cpuMicros(proxy.pid) - before
  return kind === 'small'
    ? { perSecond: count / seconds, cpuPerRequestUs: cpu / count }
    : { mibPerSecond: count / (1 << 20) / seconds, cpuPerMibUs: cpu / (count / (1 << 20)) }
}
// Warm-up: tunnels, leaves and the JIT.
await smallRound(agent, `https://${secretHost}/small`)
await smallRound(agent, `https://${plainHost}/small`)
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? [['secret', secretHost], ['plain', plainHost]] : [['plain', plainHost], ['secret', secretHost]]
  for (const [name, host] of order) results[name].small.push(await measure('small', host, smallRound))
  for (const [name, host] of order) results[name].large.push(await measure('large', host, largeRound))
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const summary = Object.fromEntries(Object.entries(results).map(([name, { small, large }]) => [name, {
  smallPerSecond: Math.round(median(small.map((r) => r.perSecond))),
  smallCpuPerRequestUs: Math.round(median(small.map((r) => r.cpuPerRequestUs))),
  largeMibPerSecond: Math.round(median(large.map((r) => r.mibPerSecond))),
  largeCpuPerMibUs: Math.round(median(large.map((r) => r.cpuPerMibUs)))
}]))
console.log(JSON.stringify({ node: process.version, rounds: ROUNDS, seconds: SECONDS, largeDownloadsPerRound: LARGE_COUNT, summary, results }, null, 2))
await agent.close()
proxy.kill()
secretOrigin.close()
plainOrigin.close()
secretOrigin.closeAllConnections()
plainOrigin.closeAllConnections()
rmSync(dir, { recursive: true, force: true })
