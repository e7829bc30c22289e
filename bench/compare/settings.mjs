// The comparison's knobs, from environment variables (see docs/benchmarks.md).
import { SHIPPED_NODE_ARGS } from '../shipped-node-args.mjs'

export const LOAD_SCENARIOS = ['http', 'tunnel', 'intercept', 'intercept-new', 'download', 'download-intercept', 'tunnel-hey', 'intercept-hey', 'intercept-new-hey']
export const EXTRA_SCENARIOS = ['sse', 'idle', 'idle-intercept', 'h2', 'leaves']
const PEER_NAMES = ['ours', 'squid', 'mitmproxy', 'chained']
// BENCH_SUITE=per-request (bench/compare/per-request.mjs): its scenarios and paths.
export const SUITE_SCENARIOS = ['http', 'intercept-hey', 'connect']
const SUITE_PEER_NAMES = ['node-floor', 'fastify-floor', 'ours-minimal', 'ours-full', 'squid', 'fastify-intercept-floor', 'connect-floor', 'fastify-connect-floor', 'plugin']

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

/**
 * Reads the knobs; BENCH_SMOKE=1 changes the defaults to a run of a few seconds with ours only
 * (with BENCH_SUITE=per-request: every path of the suite, 1 round of 0.5 s).
 */
export function readSettings () {
  const smoke = process.env.BENCH_SMOKE === '1'
  const suite = list('BENCH_SUITE', ['comparison'], ['comparison', 'per-request'])[0]
  if (suite === 'per-request') return readSuiteSettings(smoke)
  const all = [...LOAD_SCENARIOS, ...EXTRA_SCENARIOS]
  return {
    suite,
    ...roundSettings(smoke),
    scenarios: list('BENCH_SCENARIOS', all, all),
    // The chained peer (ours through ours) only when asked for.
    peers: list('BENCH_PEERS', smoke ? ['ours'] : PEER_NAMES.filter((name) => name !== 'chained'), PEER_NAMES),
    idleTunnels: number('BENCH_IDLE_TUNNELS', smoke ? 100 : 10_000),
    idleIntercepted: number('BENCH_IDLE_INTERCEPTED', smoke ? 20 : 2000),
    leaves: number('BENCH_LEAVES', smoke ? 20 : 1000),
    sseSamples: number('BENCH_SSE_SAMPLES', smoke ? 3 : 20),
    oursNodeArgs: oursNodeArgs(),
    origin: list('BENCH_ORIGIN', ['nginx'], ['nginx', 'node'])[0],
    httpClient: list('BENCH_HTTP_CLIENT', ['hey'], ['hey', 'node'])[0],
    jsonPath: process.env.BENCH_JSON ?? (smoke ? '' : 'bench/results/latest.json')
  }
}

/**
 * The knobs both suites share: `smoke`, and the rounds, their length, the warm-up and the
 * connections; `defaults` gives a suite's own length and warm-up outside a smoke run.
 */
function roundSettings (smoke, defaults = { duration: 3, warmupMs: 1000 }) {
  return {
    smoke,
    rounds: number('BENCH_ROUNDS', smoke ? 1 : 5),
    duration: number('BENCH_DURATION', smoke ? 0.5 : defaults.duration),
    warmupMs: number('BENCH_WARMUP_MS', smoke ? 1 : defaults.warmupMs),
    connections: number('BENCH_CONNECTIONS', 32)
  }
}

/**
 * The per-request suite's knobs: the same names, other defaults (every path, hey for every load
 * scenario unless BENCH_HTTP_CLIENT is node, curl or chromium), and BENCH_ACCESS_LOG (`file`:
 * ours' stdout and Squid's access_log into files in the run's folder; `null`: both into
 * /dev/null).
 */
function readSuiteSettings (smoke) {
  return {
    suite: 'per-request',
    // warmupMs: a hey run of this length through every path before each scenario's rounds (not counted; none under 100 ms).
    // Runs of 6 s after 2 s of warm-up: the method the per-request targets were set with.
    ...roundSettings(smoke, { duration: 6, warmupMs: 2000 }),
    scenarios: list('BENCH_SCENARIOS', SUITE_SCENARIOS, SUITE_SCENARIOS),
    peers: list('BENCH_PEERS', SUITE_PEER_NAMES, SUITE_PEER_NAMES),
    accessLog: list('BENCH_ACCESS_LOG', ['file'], ['file', 'null'])[0],
    oursNodeArgs: oursNodeArgs(),
    origin: list('BENCH_ORIGIN', ['nginx'], ['nginx', 'node'])[0],
    // hey (Go's net/http), `node`: bench/load.mjs (undici), `curl` (bench/compare/curl.mjs) or
    // `chromium` (bench/compare/browser.mjs) for the http:// and intercepted rounds.
    httpClient: list('BENCH_HTTP_CLIENT', ['hey'], ['hey', 'node', 'curl', 'chromium'])[0],
    // Seconds every path sits quiet after the last scenario before its memory is read once more (0: not read).
    quietAfter: number('BENCH_QUIET_AFTER', 0),
    jsonPath: process.env.BENCH_JSON ?? (smoke ? '' : 'bench/results/per-request-latest.json')
  }
}

function oursNodeArgs () {
  return process.env.BENCH_OURS_NODE_ARGS === undefined ? SHIPPED_NODE_ARGS : process.env.BENCH_OURS_NODE_ARGS.split(/\s+/).filter(Boolean)
}
