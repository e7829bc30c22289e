// The comparison's knobs, from environment variables (see docs/benchmarks.md).
import { SHIPPED_NODE_ARGS } from '../shipped-node-args.mjs'

export const LOAD_SCENARIOS = ['http', 'tunnel', 'intercept', 'intercept-new', 'download', 'download-intercept', 'tunnel-hey', 'intercept-hey', 'intercept-new-hey']
export const EXTRA_SCENARIOS = ['sse', 'idle', 'idle-intercept', 'h2', 'leaves']
const PEER_NAMES = ['ours', 'squid', 'mitmproxy', 'chained']

function list (name, fallback, allowed) {
  const value = process.env[name]
  const items = (value === undefined || value === '' ? fallback : value.split(',')).map((s) => s.trim()).filter(Boolean)
  for (const item of items) if (!allowed.includes(item)) throw new Error(`${name}: unknown "${item}" (known: ${allowed.join(', ')})`)
  return items
}

function number (name, fallback) {
  const value = process.env[name]
  if (value === undefined || value === '') return fallback
  const parsed = Number(value)
  if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`${name}: "${value}" is not a positive number`)
  return parsed
}

/** Reads the knobs; BENCH_SMOKE=1 changes the defaults to a run of a few seconds with ours only. */
export function readSettings () {
  const smoke = process.env.BENCH_SMOKE === '1'
  const all = [...LOAD_SCENARIOS, ...EXTRA_SCENARIOS]
  return {
    smoke,
    rounds: number('BENCH_ROUNDS', smoke ? 1 : 5),
    duration: number('BENCH_DURATION', smoke ? 0.5 : 3),
    warmupMs: number('BENCH_WARMUP_MS', smoke ? 1 : 1000),
    connections: number('BENCH_CONNECTIONS', 32),
    scenarios: list('BENCH_SCENARIOS', all, all),
    // The chained peer (ours through ours) only when asked for.
    peers: list('BENCH_PEERS', smoke ? ['ours'] : PEER_NAMES.filter((name) => name !== 'chained'), PEER_NAMES),
    idleTunnels: number('BENCH_IDLE_TUNNELS', smoke ? 100 : 10_000),
    idleIntercepted: number('BENCH_IDLE_INTERCEPTED', smoke ? 20 : 2000),
    leaves: number('BENCH_LEAVES', smoke ? 20 : 1000),
    sseSamples: number('BENCH_SSE_SAMPLES', smoke ? 3 : 20),
    oursNodeArgs: process.env.BENCH_OURS_NODE_ARGS === undefined ? SHIPPED_NODE_ARGS : process.env.BENCH_OURS_NODE_ARGS.split(/\s+/).filter(Boolean),
    origin: list('BENCH_ORIGIN', ['nginx'], ['nginx', 'node'])[0],
    httpClient: list('BENCH_HTTP_CLIENT', ['hey'], ['hey', 'node'])[0],
    jsonPath: process.env.BENCH_JSON ?? (smoke ? '' : 'bench/results/latest.json')
  }
}
