import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { test } from 'tap'

// The comparison harness (bench/compare.mjs) is plain JavaScript outside the package; its parsers
// and medians are checked here because CI may lack hey, and the smoke run only shows that they
// do not throw.
interface HeyResult { requests: number, reqPerSec: number, p50: number, p99: number, errors: number }
interface Bench {
  parseHeySummary: (text: string) => HeyResult
  median: (values: number[]) => number
  summarize: (
    runs: Record<string, Record<string, Array<Record<string, number>>>>,
    peers: string[]
  ) => Record<string, { ratios: Record<string, number>, paths: Record<string, { rate: number, errors: number }> }>
}
async function load (): Promise<Bench> {
  const root = join(__dirname, '..', 'bench', 'compare')
  const hey = await import(pathToFileURL(join(root, 'hey.mjs')).href) as Pick<Bench, 'parseHeySummary'>
  const report = await import(pathToFileURL(join(root, 'report.mjs')).href) as Pick<Bench, 'median' | 'summarize'>
  return { ...hey, ...report }
}

interface Path { name: string }
interface RoundRun { round: number, reqPerSec: number, cpuMicrosPerRequest: number }
interface Comparison { label: string, name: string, base: string, median: number, each: number[] }
interface PerRequestSuite {
  roundOrder: (paths: Path[], round: number, adjacent?: string[]) => Path[]
  ratiosToRelay: (byPath: Record<string, Array<{ round: number, cpuMicrosPerRequest: number }>>) => Record<string, number>
  sameMinuteRatios: (scenario: string, byPath: Record<string, RoundRun[]>) => Comparison[]
  CONNECT_PAIR: string[]
  ADJACENT: Record<string, string[]>
}
async function loadPerRequest (): Promise<PerRequestSuite> {
  return await import(pathToFileURL(join(__dirname, '..', 'bench', 'compare', 'per-request.mjs')).href) as PerRequestSuite
}

// The layout hey 0.1.4 (Debian) prints; histogram and details shortened.
const HEY_OUTPUT = `
Summary:
  Total:\t2.0000 secs
  Slowest:\t0.0400 secs
  Fastest:\t0.0001 secs
  Average:\t0.0011 secs
  Requests/sec:\t1060.0000

Latency distribution:
  10% in 0.0002 secs
  50% in 0.0007 secs
  90% in 0.0014 secs
  99% in 0.0250 secs

Status code distribution:
  [200]\t2000 responses
  [502]\t20 responses

Error distribution:
  [100]\tGet "http://127.0.0.1:1/small": dial tcp 127.0.0.1:1: connect: connection refused
`

test('bench compare: the hey summary counts only 2xx responses per second, and 5xx plus transport errors as errors', async (t) => {
  const { parseHeySummary } = await load()
  const result = parseHeySummary(HEY_OUTPUT)
  t.equal(result.requests, 2000)
  t.equal(result.reqPerSec, 1000, '2xx responses / Total, not hey\'s Requests/sec')
  t.equal(result.p50, 0.7)
  t.equal(result.p99, 25)
  t.equal(result.errors, 120, '20 responses 502 + 100 connection errors')
})

test('bench compare: a hey summary without a 99% line (few requests) gives p99 NaN, shown as "-"', async (t) => {
  const { parseHeySummary } = await load()
  const result = parseHeySummary(HEY_OUTPUT.replace('  99% in 0.0250 secs\n', ''))
  t.ok(Number.isNaN(result.p99))
  t.equal(result.requests, 2000)
})

test('bench compare: ratios are the median of per-round proxy / direct, and a failed round does not count', async (t) => {
  const { median, summarize } = await load()
  t.equal(median([3, 1, 2]), 2)
  t.equal(median([4, 1, 2, 3]), 2.5)
  t.ok(Number.isNaN(median([NaN])))
  const runs = {
    http: {
      direct: [{ reqPerSec: 1000, p50: 1, p99: 2, errors: 0 }, { reqPerSec: 2000, p50: 1, p99: 2, errors: 0 }, { reqPerSec: 1000, p50: 1, p99: 2, errors: 0 }],
      ours: [{ reqPerSec: 500, p50: 1, p99: 2, errors: 0 }, { reqPerSec: 1800, p50: 1, p99: 2, errors: 0 }, { reqPerSec: NaN, p50: NaN, p99: NaN, errors: 1 }]
    }
  }
  const summary = summarize(runs, ['ours'])
  t.equal(summary.http?.ratios.ours, 0.7, 'median of 0.5 and 0.9; the failed third round is left out')
  t.equal(summary.http?.paths.ours?.errors, 1)
  t.equal(summary.http?.paths.direct?.rate, 1000)
})

test('bench compare: in the CONNECT rounds the relay and the plugin run one right after the other, their order swapping each round, every path once per round', async (t) => {
  const { roundOrder, CONNECT_PAIR } = await loadPerRequest()
  const paths = ['connect-floor', 'fastify-connect-floor', 'plugin', 'ours-full', 'squid'].map((name) => ({ name }))
  const firsts = new Set<string>()
  for (let round = 0; round < 6; round++) {
    const names = roundOrder(paths, round, CONNECT_PAIR).map((p) => p.name)
    t.same([...names].sort(), paths.map((p) => p.name).sort(), `round ${round}: every path once`)
    const relay = names.indexOf('connect-floor')
    const plugin = names.indexOf('plugin')
    t.equal(Math.abs(relay - plugin), 1, `round ${round}: ${names.join(', ')}`)
    t.equal(relay < plugin, round % 2 === 0, `round ${round}: the relay first in even rounds`)
    firsts.add(names[0] ?? '')
  }
  t.ok(firsts.size > 1, 'the order still rotates')
  const rotated = roundOrder(paths, 1).map((p) => p.name)
  t.same(rotated, ['fastify-connect-floor', 'plugin', 'ours-full', 'squid', 'connect-floor'], 'without a pair, a plain rotation')
})

test('bench compare: each path against the relay is the median of the ratios within each round, a round without the relay left out', async (t) => {
  const { ratiosToRelay } = await loadPerRequest()
  const ratios = ratiosToRelay({
    'connect-floor': [{ round: 0, cpuMicrosPerRequest: 100 }, { round: 1, cpuMicrosPerRequest: 200 }, { round: 2, cpuMicrosPerRequest: 400 }],
    plugin: [
      { round: 0, cpuMicrosPerRequest: 120 },
      { round: 1, cpuMicrosPerRequest: 300 },
      { round: 2, cpuMicrosPerRequest: 440 },
      { round: 3, cpuMicrosPerRequest: 999 }
    ]
  })
  t.equal(ratios['connect-floor'], 1)
  t.equal(ratios.plugin, 1.2, 'ratios 1.2, 1.5 and 1.1; the ratio of the medians (370 / 200) would say 1.85')
})

test('bench compare: in the http:// rounds the full bin, Squid, the Fastify route and the minimal bin run one after the other, each of them first in turn, every path once per round', async (t) => {
  const { roundOrder, ADJACENT } = await loadPerRequest()
  const group = ADJACENT.http ?? []
  t.same(group, ['ours-full', 'squid', 'fastify-floor', 'ours-minimal'])
  const paths = ['direct', 'node-floor', 'fastify-floor', 'ours-minimal', 'ours-full', 'squid'].map((name) => ({ name }))
  const groupFirsts = new Set<string>()
  for (let round = 0; round < 4; round++) {
    const names = roundOrder(paths, round, group).map((p) => p.name)
    t.same([...names].sort(), paths.map((p) => p.name).sort(), `round ${round}: every path once`)
    const places = group.map((name) => names.indexOf(name)).sort((a, b) => a - b)
    t.equal((places.at(-1) ?? 0) - (places[0] ?? 0), group.length - 1, `round ${round}: ${names.join(', ')}`)
    groupFirsts.add(names[places[0] ?? 0] ?? '')
  }
  t.equal(groupFirsts.size, group.length, 'each of the four opens the group in one of four rounds')
})

test('bench compare: a target\'s comparison is the median of the ratios of the same round, a round where either path is missing left out', async (t) => {
  const { sameMinuteRatios } = await loadPerRequest()
  const run = (round: number, reqPerSec: number, cpuMicrosPerRequest: number): RoundRun => ({ round, reqPerSec, cpuMicrosPerRequest })
  const comparisons = sameMinuteRatios('http', {
    'ours-full': [run(0, 900, 110), run(1, 5000, 200), run(2, 8000, 100), run(3, 100, 900)],
    squid: [run(0, 1000, 100), run(1, 4000, 150), run(2, 10000, 90)],
    'fastify-floor': [run(0, 1000, 100), run(1, 1000, 160), run(2, 1000, 125)]
  })
  const byLabel = Object.fromEntries(comparisons.map((c) => [c.label, c]))
  t.same(byLabel['req/s, the full bin over Squid']?.each, [0.9, 1.25, 0.8], 'round 3 has no Squid run')
  t.equal(byLabel['req/s, the full bin over Squid']?.median, 0.9, 'the ratio of the medians (5000 / 4000) would say 1.25')
  t.same(byLabel['CPU per request, the full bin over the Fastify route']?.each, [1.1, 1.25, 0.8])
  t.notOk('CPU per request, the full bin over the minimal bin' in byLabel, 'no comparison with a path that did not run')
  t.same(sameMinuteRatios('connect', {}), [], 'the CONNECT scenario has its own ratio to the relay')
})
