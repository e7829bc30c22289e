// What sharing a user's requestsPerMinute costs per http:// request, with both clients (undici,
// hey): the bin with the full configuration (as in bench/bin-ab.mjs) and a user whose
// requestsPerMinute is never reached, counted
//   - in the process (no store),
//   - in Redis (the `redis` key; a redis-server on loopback, started here),
// and, with `"workers": 2`, in the first process over the cluster channel, against the same two
// workers with no requestsPerMinute. Beside them, the floor of what waiting on Redis costs: the
// bare Fastify route (bench/floor-fastify-proxy.mjs) with and without one PING per turn of its
// event loop. CPU is user + system time of the proxy's processes (the first process and its
// workers) per request answered; Redis's own CPU is shown beside it.
// `npm run build && node bench/shared-limits-cost.mjs` (BENCH_ROUNDS, default 5; BENCH_SECONDS,
// default 5; BENCH_CONFIGS, a comma-separated subset of the names in `configs`). Needs
// redis-server (apt-get install redis-server).
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { makeCa } from './pki.mjs'
import { locate } from './compare/tools.mjs'
import { CONNECTIONS, cpuMicros, hey, heyLoad, median, startBin, undiciLoad } from './bin-load.mjs'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const here = resolve(import.meta.dirname, '..')
const dir = mkdtempSync(join(tmpdir(), 'ffp-shared-limits-'))
const ca = makeCa(dir, 'operator')
const USER = 'bench'
const PASSWORD = 'bench-password'
const NEVER_REACHED = 1_000_000_000

const redisPort = 40_000 + Math.floor(Math.random() * 10_000)
const redisServer = locate(['redis-server'])
if (redisServer === undefined) throw new Error('redis-server is not installed (apt-get install redis-server)')
const redis = spawn(redisServer, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] })
// Never left behind, whatever ends this script.
process.on('exit', () => redis.kill())
await new Promise((resolve) => redis.stdout.on('data', (chunk) => { if (String(chunk).includes('Ready to accept connections')) resolve() }))

const base = (port, user) => ({
  listen: [{ host: '127.0.0.1', port }],
  users: { [USER]: user },
  destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
  interception: { hosts: ['a.example', 'b.example'], ca: { cert: ca.certPath, key: ca.keyPath }, trustedDestinationCa: ca.certPath },
  headers: [{ hosts: ['a.example', 'b.example'], set: { 'X-Team': 'bench' } }]
})
const limited = { password: PASSWORD, requestsPerMinute: NEVER_REACHED }
const redisUrl = `redis://127.0.0.1:${redisPort}/0`
const bin = (config) => () => startBin(here, dir, config)
const configs = {
  'no store': bin((port) => base(port, limited)),
  redis: bin((port) => ({ ...base(port, limited), redis: { url: redisUrl } })),
  'workers 2, no requestsPerMinute': bin((port) => ({ ...base(port, PASSWORD), workers: 2 })),
  'workers 2, requestsPerMinute in the first process': bin((port) => ({ ...base(port, limited), workers: 2 })),
  'floor: bare Fastify route': () => startFloor({}),
  'floor: bare Fastify route + one Redis PING per turn': () => startFloor({ FLOOR_REDIS_URL: redisUrl })
}

async function startFloor (env) {
  const floor = spawn(process.execPath, [join(here, 'bench', 'floor-fastify-proxy.mjs')], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  const port = Number(await new Promise((resolve) => floor.stdout.once('data', (chunk) => resolve(String(chunk).trim()))))
  return { bin: floor, port }
}

/** CPU of `pid` and the processes it forked (the workers). */
function treeCpuMicros (pid) {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  return cpuMicros(pid) + children.reduce((sum, child) => sum + cpuMicros(child), 0)
}

const origin = spawn(process.execPath, [join(here, 'bench', 'origin.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] })
process.on('exit', () => origin.kill())
const originPort = Number(await new Promise((resolve) => origin.stdout.once('data', (chunk) => resolve(String(chunk).trim()))))
const target = `http://127.0.0.1:${originPort}/small`
const credentials = `${USER}:${PASSWORD}`

const results = {}
for (let round = 0; round < ROUNDS; round++) {
  const names = process.env.BENCH_CONFIGS?.split(',') ?? Object.keys(configs)
  for (const config of round % 2 === 0 ? names : [...names].reverse()) {
    for (const [client, load] of [['undici', undiciLoad], ...(hey === undefined ? [] : [['hey', async (...args) => heyLoad(...args)]])]) {
      process.stderr.write(`round ${round + 1}: ${config}, ${client}\n`)
      const { bin, port } = await configs[config]()
      await load(port, target, credentials, 1)
      const before = treeCpuMicros(bin.pid)
      const redisBefore = cpuMicros(redis.pid)
      const started = Date.now()
      const answered = await load(port, target, credentials, SECONDS)
      const seconds = (Date.now() - started) / 1000
      ;(results[`${config} | ${client}`] ??= []).push({
        reqPerSec: answered / seconds,
        cpuPerRequestUs: (treeCpuMicros(bin.pid) - before) / answered,
        redisPerRequestUs: (cpuMicros(redis.pid) - redisBefore) / answered
      })
      bin.kill()
      await new Promise((resolve) => bin.once('exit', resolve))
    }
  }
}
console.log('| counted | client | req/s | bin CPU µs per request | each round (µs) | redis-server µs per request |\n|---|---|---|---|---|---|')
for (const [key, rounds] of Object.entries(results)) {
  console.log(`| ${key} | ${Math.round(median(rounds.map((r) => r.reqPerSec)))} | ${median(rounds.map((r) => r.cpuPerRequestUs)).toFixed(1)} | ${rounds.map((r) => r.cpuPerRequestUs.toFixed(1)).join(' / ')} | ${median(rounds.map((r) => r.redisPerRequestUs)).toFixed(1)} |`)
}
console.log(`\n${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections, Node ${process.version}, origin bench/origin.mjs`)
origin.kill()
redis.kill()
rmSync(dir, { recursive: true, force: true })
