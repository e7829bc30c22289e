// The per-request suite of the comparison: what one request costs each proxy, as users run them,
// against the floors of Node and Fastify, in one alternating run.
//
//   BENCH_SUITE=per-request npm run bench:compare      # builds dist/, then node bench/compare.mjs
//   BENCH_SUITE=per-request BENCH_ROUNDS=2 BENCH_DURATION=2 node bench/compare.mjs   # a short run
//   BENCH_SUITE=per-request BENCH_SMOKE=1 node bench/compare.mjs                     # 1 round of 0.5 s
//   BENCH_SUITE=per-request BENCH_SCENARIOS=connect npm run bench:compare             # one piece only
//   (memory is read in every run: idle, then after each scenario's rounds)
//
// Scenarios (BENCH_SCENARIOS, default all three), each with its own rounds (BENCH_ROUNDS, 5, of
// BENCH_DURATION s, 6, after a warm-up run of BENCH_WARMUP_MS, 2000, through every path), the
// paths' order rotating from round to round, the paths a target compares one right after the
// other (their order rotating too: ADJACENT); medians over the rounds, and for each target the
// median of the rounds' ratios of those paths (run in the same minute):
// - `http`: hey (BENCH_CONNECTIONS, 32 connections, keep-alive, BENCH_DURATION s per run) GETs
//   13 B from the origin's http:// port on 127.0.0.1, direct and through the bare Node floor
//   (bench/floor-node-proxy.mjs), the bare Fastify floor (bench/floor-fastify-proxy.mjs), the bin
//   with the minimal configuration (`listen`, one user, `destinations` allowing loopback), the bin
//   with the full configuration (the minimal one plus `interception` of 127.0.0.2 and
//   api.example.com, a CA and `trustedDestinationCa`, and one header rule for those two hosts) and
//   Squid (Basic auth through basic_ncsa_auth, access log on, ssl_bump of the same two hosts).
//   The bins run at their default log level (`info`: one access line per request) with stdout
//   into a file (BENCH_ACCESS_LOG=null: /dev/null, Squid's access_log too).
// - `intercept-hey`: the same client GETs https://127.0.0.2/small, direct and through the full bin,
//   Squid and the bare Fastify intercepting floor (bench/floor-fastify-intercept.mjs), all three
//   intercepting it (hey does not verify certificates).
// - `connect`: 32 clients open a connection, send CONNECT to the origin's plain port, read the
//   answer and close (bench/compare/connect-client.mjs), through the bare Node 'connect' relay
//   (bench/floor-connect-proxy.mjs), the bare Fastify CONNECT route (bench/floor-fastify-connect.mjs),
//   the plugin in a minimal Fastify app (bench/proxy-server.mjs), the full bin and Squid.
// BENCH_HTTP_CLIENT=node puts bench/load.mjs (undici) in hey's place in the `http` and
// `intercept-hey` rounds, BENCH_HTTP_CLIENT=curl puts curl there (bench/compare/curl.mjs:
// `--parallel` transfers over as many keep-alive connections; both verify the intercepting
// proxies' leaves against the operator CA), and BENCH_HTTP_CLIENT=chromium headless Chromium
// (bench/compare/browser.mjs: a page of the origin fetching from it, as many fetches in flight,
// over the connections the browser opens).
// The CONNECT table also gives each path's CPU over the relay's as the median of the rounds'
// ratios: the plugin and the relay ran in the same seconds, so this is the figure of its target.
// Each run reads the proxy's user + system CPU from /proc/<pid>/stat (with its child processes:
// Squid's helpers) before and after, and divides by the requests answered (2xx; 200 to CONNECT).
// Memory: RSS of every proxy at idle (1 s after start) and after each scenario's rounds, and for
// the Node paths where it is (V8's heap pages, malloc by thread, files: bench/rss-parts.mjs).
// Ours, the floors and the plugin all run with the Node options `npm start` passes
// (BENCH_OURS_NODE_ARGS, default bench/shipped-node-args.mjs), so their differences are code.
// BENCH_PEERS narrows the paths (node-floor, fastify-floor, ours-minimal, ours-full, squid,
// fastify-intercept-floor, connect-floor, fastify-connect-floor, plugin). The JSON goes to
// bench/results/per-request-latest.json (BENCH_JSON).
// Squid needs the squid-openssl build (ssl_bump, security_file_certgen): see BENCH_SQUID_ROOT in
// bench/compare/tools.mjs when Debian's GnuTLS `squid` is the one installed.
import { setTimeout as delay } from 'node:timers/promises'
import { runBrowser } from './browser.mjs'
import { connectLoad } from './connect-client.mjs'
import { runCurl } from './curl.mjs'
import { runHey } from './hey.mjs'
import { runUndiciLoad } from './load-scenarios.mjs'
import { PLAIN_HOST, TLS_HOST } from './origin.mjs'
import { BENCH_AUTHORIZATION, BENCH_USER, SUITE_PEERS, startPeers } from './peers.mjs'
import { cpuSeconds, endedChildrenCpuSeconds, memoryMiB, tcpPassiveOpens } from './processes.mjs'
import { rssParts } from '../rss-parts.mjs'
import { median } from './report.mjs'

/** The scenarios' headings; those of http:// and intercepted requests name their client after them. */
export const SUITE_LABELS = {
  http: 'http:// forwarding, keep-alive, 13 B responses',
  'intercept-hey': 'intercepted (127.0.0.2), keep-alive, 13 B responses',
  connect: 'CONNECT to the origin, answer read, connection closed'
}
/** The client of the http:// and intercepted rounds, by BENCH_HTTP_CLIENT, for those headings. */
const CLIENT_LABELS = { hey: 'hey', node: 'undici: bench/load.mjs', curl: 'curl --parallel, HTTP/1.1', chromium: 'headless Chromium, fetch() in a page of the origin' }
const fixed = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-')
const thousands = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-')

/** Starts the suite's paths that take part in a selected scenario and have their tools. */
async function startPaths ({ settings, problems, processes, print }, context, tools) {
  const chosen = SUITE_PEERS.filter((peer) => {
    if (!settings.peers.includes(peer.name) || !peer.scenarios.some((s) => settings.scenarios.includes(s))) return false
    const absent = peer.needs.filter((tool) => tools[tool] === undefined)
    if (absent.length > 0) print(`skipping ${peer.label}: ${absent.join(', ')} not found`)
    return absent.length === 0
  })
  return await startPeers(chosen, context, processes, (peer, error) => {
    print(`${peer.label} did not start, skipped: ${error.message}`)
    problems.push(`${peer.name} did not start`)
  })
}

/**
 * One run of `scenario` through `path` (direct when it has no port) with the suite's client:
 * hey, bench/load.mjs (undici) under BENCH_HTTP_CLIENT=node, curl under BENCH_HTTP_CLIENT=curl,
 * or headless Chromium under BENCH_HTTP_CLIENT=chromium. undici and curl verify the intercepted
 * answers against the operator CA (direct, against the destination CA); hey and Chromium
 * verify nothing.
 */
function clientRun (scenario, origin, pki, settings, path, seconds) {
  const auth = Boolean(path.peer?.auth)
  if (settings.httpClient === 'node') {
    const options = { duration: seconds, connections: settings.connections, warmupMs: 0, authorization: auth ? BENCH_AUTHORIZATION : undefined }
    return runUndiciLoad(scenario === 'http' ? 'http' : 'intercept', origin, pki, options, path.port)
  }
  const url = scenario === 'http' ? `http://${PLAIN_HOST}:${origin.httpPort}/small` : `https://${TLS_HOST}:${origin.httpsPort}/small`
  const proxyUser = auth ? BENCH_USER : undefined
  if (settings.httpClient === 'curl') {
    return runCurl(settings.curlPath, url, path.port, seconds, settings.connections, { proxyUser, caPath: curlVerification(scenario, pki, path), http1: true })
  }
  if (settings.httpClient === 'chromium') {
    return runBrowser(settings.chromiumPath, url, path.port, seconds, settings.connections, { proxyUser, insecure: scenario !== 'http' })
  }
  return runHey(settings.heyPath, url, path.port, seconds, settings.connections, true, proxyUser)
}

/**
 * What curl verifies an https:// answer against: the destination CA direct, the operator CA
 * through an intercepting path, nothing through Squid. Squid's client-first leaf names the IP
 * target 127.0.0.2 as a DNS name, not an IP address, which curl rightly refuses (undici's client
 * is told to accept it); `--insecure` costs curl no less TLS work, only the checks.
 */
function curlVerification (scenario, pki, path) {
  if (scenario === 'http') return undefined
  if (path.port === undefined) return pki.destinationCa.certPath
  return path.name === 'squid' ? 'insecure' : pki.operatorCa.certPath
}

/** One CONNECT-cost run through `path`. */
function connectRun (origin, settings, path, seconds) {
  return connectLoad({ proxyPort: path.port, target: `${PLAIN_HOST}:${origin.httpPort}`, seconds, parallel: settings.connections, authorization: path.peer.auth ? BENCH_AUTHORIZATION : undefined })
}

/**
 * The paths of one round. The order rotates from round to round; the paths named in `adjacent`
 * (those a target compares: the CONNECT scenario's relay and plugin, the bin against Squid and
 * the floors) run one right after the other, their own order rotating too, so their ratios
 * compare the same minute of a machine whose speed moves by half from one minute to the next.
 */
export function roundOrder (paths, round, adjacent = []) {
  const group = adjacent.map((name) => paths.find((p) => p.name === name)).filter(Boolean)
  if (group.length < 2) return paths.map((_, i) => paths[(i + round) % paths.length])
  const rest = paths.filter((p) => !group.includes(p))
  const rotated = rest.map((_, i) => rest[(i + round) % rest.length])
  const together = group.map((_, i) => group[(i + round) % group.length])
  const at = round % (rotated.length + 1)
  return [...rotated.slice(0, at), ...together, ...rotated.slice(at)]
}

/** The paths whose CONNECT ratio is a target: the bare Node relay, then the plugin. */
export const CONNECT_PAIR = ['connect-floor', 'plugin']

/**
 * The paths that run together in each scenario's rounds (see {@link roundOrder}): the full bin
 * with what its targets compare it with.
 */
export const ADJACENT = {
  http: ['ours-full', 'squid', 'fastify-floor', 'ours-minimal'],
  'intercept-hey': ['ours-full', 'squid', 'fastify-intercept-floor'],
  connect: CONNECT_PAIR
}

/**
 * The comparisons of the targets, each as the median of the rounds' ratios of two paths that
 * ran one right after the other: `[label, path, base, metric]`, the ratio being path / base.
 */
const SAME_MINUTE = {
  http: [
    ['req/s, the full bin over Squid', 'ours-full', 'squid', 'reqPerSec'],
    ['CPU per request, the full bin over the Fastify route', 'ours-full', 'fastify-floor', 'cpuMicrosPerRequest'],
    ['CPU per request, the full bin over the minimal bin', 'ours-full', 'ours-minimal', 'cpuMicrosPerRequest'],
    ['req/s, the minimal bin over Squid', 'ours-minimal', 'squid', 'reqPerSec'],
    ['req/s, the Fastify route over Squid', 'fastify-floor', 'squid', 'reqPerSec']
  ],
  'intercept-hey': [
    ['req/s, the full bin over Squid', 'ours-full', 'squid', 'reqPerSec'],
    ['CPU per request, the full bin over the Fastify intercepting route', 'ours-full', 'fastify-intercept-floor', 'cpuMicrosPerRequest'],
    ['req/s, the Fastify intercepting route over Squid', 'fastify-intercept-floor', 'squid', 'reqPerSec']
  ]
}

/** Each round's `metric` of `name` over that of `base` in the same round (rounds without both left out). */
export function roundRatios (byPath, name, base, metric) {
  const bases = byPath[base] ?? []
  return (byPath[name] ?? []).map((r) => {
    const b = bases.find((x) => x.round === r.round)?.[metric]
    return b === undefined ? NaN : r[metric] / b
  }).filter(Number.isFinite)
}

/**
 * Runs `measure(path)` through every path, `settings.rounds` times, the order rotating; a warm-up
 * first. Besides the proxy's CPU, each run records the client's (the child process that ran it)
 * and the origin's (`originPids`) per request: on a machine they share, what one proxy makes
 * them do counts in its req/s too.
 */
async function rounds ({ settings, problems, print }, scenario, paths, measure, adjacent, originPids) {
  const byPath = Object.fromEntries(paths.map((p) => [p.name, []]))
  if (settings.warmupMs >= 100) {
    for (const path of paths) {
      try { await measure(path, settings.warmupMs / 1000) } catch (error) { print(`warm-up ${scenario} ${path.name}: ${error.message.split('\n')[0]}`) }
    }
  }
  for (let round = 0; round < settings.rounds; round++) {
    for (const path of roundOrder(paths, round, adjacent)) {
      const before = path.pid === undefined ? NaN : cpuSeconds(path.pid)
      const clientBefore = endedChildrenCpuSeconds()
      const originBefore = originCpuSeconds(originPids)
      const acceptedBefore = tcpPassiveOpens()
      let result
      try {
        result = await measure(path, settings.duration)
      } catch (error) {
        result = { requests: 0, reqPerSec: NaN, p50: NaN, p99: NaN, errors: 1, failure: error.message.split('\n')[0] }
      }
      const cpu = path.pid === undefined ? NaN : cpuSeconds(path.pid) - before
      const perRequest = (seconds) => seconds * 1e6 / result.requests
      const record = {
        round,
        ...result,
        accepted: tcpPassiveOpens() - acceptedBefore,
        cpuSeconds: cpu,
        cpuMicrosPerRequest: perRequest(cpu),
        clientMicrosPerRequest: perRequest(endedChildrenCpuSeconds() - clientBefore),
        originMicrosPerRequest: perRequest(originCpuSeconds(originPids) - originBefore)
      }
      byPath[path.name].push(record)
      print(`round ${round + 1} ${scenario} ${path.name}: ${fixed(result.reqPerSec)} ${scenario === 'connect' ? 'CONNECT' : 'req'}/s, ${fixed(record.cpuMicrosPerRequest, 1)} µs CPU per ${scenario === 'connect' ? 'CONNECT' : 'request'} (client ${fixed(record.clientMicrosPerRequest, 1)}, origin ${fixed(record.originMicrosPerRequest, 1)}), errors ${result.errors}${result.failure ?? result.firstError ? ` (${result.failure ?? result.firstError})` : ''}, ${record.accepted} connections accepted`)
      if (result.requests === 0 || (settings.smoke && result.errors > 0)) problems.push(`${scenario} ${path.name}: ${result.requests} answered, ${result.errors} errors`)
    }
  }
  return byPath
}

/** CPU seconds of the origin's processes so far. */
function originCpuSeconds (pids) {
  return pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0)
}

/**
 * Each path's CPU per request over the relay's in the same round, as the median of the rounds'
 * ratios (the CONNECT scenario; NaN without the relay).
 */
export function ratiosToRelay (byPath) {
  return Object.fromEntries(Object.keys(byPath).map((name) => [name, median(roundRatios(byPath, name, CONNECT_PAIR[0], 'cpuMicrosPerRequest'))]))
}

/** The scenario's same-minute comparisons ({@link SAME_MINUTE}) whose two paths both ran: label, median, each round's ratio. */
export function sameMinuteRatios (scenario, byPath) {
  const ran = ([, name, base]) => byPath[name] !== undefined && byPath[base] !== undefined
  return (SAME_MINUTE[scenario] ?? []).filter(ran).map(([label, name, base, metric]) => {
    const each = roundRatios(byPath, name, base, metric)
    return { label, name, base, metric, median: median(each), each }
  })
}

/** Medians of one scenario's runs per path. */
function summarizeScenario (byPath) {
  const toRelay = ratiosToRelay(byPath)
  return Object.fromEntries(Object.entries(byPath).map(([name, runs]) => [name, {
    cpuToRelay: toRelay[name],
    rate: median(runs.map((r) => r.reqPerSec)),
    cpuMicrosPerRequest: median(runs.map((r) => r.cpuMicrosPerRequest)),
    clientMicrosPerRequest: median(runs.map((r) => r.clientMicrosPerRequest)),
    originMicrosPerRequest: median(runs.map((r) => r.originMicrosPerRequest)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    accepted: median(runs.map((r) => r.accepted)),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    answered: runs.reduce((sum, r) => sum + r.requests, 0),
    rounds: runs.length
  }]))
}

/** RSS and peak of a path's process tree, and for a Node path where its own RSS is (bench/rss-parts.mjs). */
function memoryOf (r) {
  return { ...memoryMiB(r.pid), parts: r.peer.name === 'squid' ? undefined : rssParts(r.pid) }
}

/**
 * The suite: starts its paths, measures idle memory, runs each selected scenario's rounds and
 * reads memory after each. Resolves with { paths, runs, summary, memory } for the report and JSON.
 */
export async function runPerRequestSuite (run, { origin, context, tools }) {
  const { settings, print } = run
  const running = await startPaths(run, context, tools)
  print(`paths: ${running.map((r) => r.peer.name).join(', ') || 'none'}\n`)
  await delay(1000)
  const memory = Object.fromEntries(running.map((r) => [r.peer.name, { idle: memoryOf(r) }]))
  const runs = {}
  const direct = { name: 'direct', label: 'direct (no proxy)' }
  const asPath = (r) => ({ name: r.peer.name, label: r.peer.label, port: r.port, pid: r.pid, peer: r.peer })
  const originPids = origin.processes.map((started) => started.child.pid)
  for (const scenario of settings.scenarios) {
    const through = running.filter((r) => r.peer.scenarios.includes(scenario)).map(asPath)
    if (through.length === 0) continue
    if (scenario === 'connect') {
      runs[scenario] = await rounds(run, scenario, through, async (path, seconds) => {
        const r = await connectRun(origin, settings, path, seconds)
        return {
          requests: r.answered,
          reqPerSec: r.answered / r.seconds,
          p50: NaN,
          p99: NaN,
          errors: r.refused + r.errors,
          refused: r.refused,
          firstError: r.firstError
        }
      }, ADJACENT.connect, originPids)
    } else {
      const measure = (path, seconds) => clientRun(scenario, origin, context.pki, settings, path, seconds)
      runs[scenario] = await rounds(run, scenario, [direct, ...through], measure, ADJACENT[scenario] ?? [], originPids)
    }
    for (const r of running) memory[r.peer.name][scenario] = memoryOf(r)
    print()
  }
  if (settings.quietAfter > 0) {
    await delay(settings.quietAfter * 1000)
    for (const r of running) memory[r.peer.name].quiet = memoryOf(r)
  }
  const labels = Object.fromEntries([direct, ...running.map(asPath)].map((p) => [p.name, p.label]))
  const summary = Object.fromEntries(Object.entries(runs).map(([scenario, byPath]) => [scenario, summarizeScenario(byPath)]))
  const sameMinute = Object.fromEntries(Object.entries(runs).map(([scenario, byPath]) => [scenario, sameMinuteRatios(scenario, byPath)]))
  return { labels, runs, summary, sameMinute, memory, participants: Object.fromEntries(running.map((r) => [r.peer.name, r.peer.scenarios])) }
}

/** The suite's Markdown tables: one per scenario, then memory. */
export function suiteTables ({ labels, runs, summary, sameMinute = {}, memory, participants }, settings) {
  const out = []
  for (const [scenario, byPath] of Object.entries(summary)) {
    const connect = scenario === 'connect'
    out.push(`### ${SUITE_LABELS[scenario]}${connect ? '' : ` (${CLIENT_LABELS[settings.httpClient]})`}\n`)
    out.push(connect
      ? '| path | answered CONNECT/s | proxy CPU µs per answered CONNECT | against the relay (median of the rounds\' ratios) | each round (µs) | client / origin CPU µs | errors |\n|---|---|---|---|---|---|---|'
      : '| path | req/s | proxy CPU µs per request | each round (µs) | client / origin CPU µs | p50 ms | p99 ms | errors | TCP connections accepted per run |\n|---|---|---|---|---|---|---|---|---|')
    for (const [name, s] of Object.entries(byPath)) {
      const each = name === 'direct' ? '-' : runs[scenario][name].map((r) => fixed(r.cpuMicrosPerRequest, 1)).join(' / ')
      const cpu = name === 'direct' ? '-' : fixed(s.cpuMicrosPerRequest, 1)
      const others = `${fixed(s.clientMicrosPerRequest, 1)} / ${fixed(s.originMicrosPerRequest, 1)}`
      out.push(connect
        ? `| ${labels[name]} | ${thousands(s.rate)} | ${cpu} | ${fixed(s.cpuToRelay, 2)}x | ${each} | ${others} | ${s.errors} |`
        : `| ${labels[name]} | ${thousands(s.rate)} | ${cpu} | ${each} | ${others} | ${fixed(s.p50, 1)} | ${fixed(s.p99, 1)} | ${s.errors} | ${thousands(s.accepted)} |`)
    }
    out.push('')
    const comparisons = sameMinute[scenario] ?? []
    if (comparisons.length > 0) {
      out.push('Run one right after the other in each round (the medians above come from different minutes):\n')
      out.push('| comparison | median of the rounds\' ratios | each round |\n|---|---|---|')
      for (const c of comparisons) out.push(`| ${c.label} | ${fixed(c.median, 2)}x | ${c.each.map((r) => fixed(r, 2)).join(' / ')} |`)
      out.push('')
    }
  }
  const phases = Object.keys(summary)
  out.push('### Memory (RSS of the proxy and its child processes, MiB)\n')
  const quiet = settings.quietAfter > 0
  out.push(`| path | idle (1 s after start) | ${phases.map((p) => `after the ${p === 'http' ? 'http://' : p === 'intercept-hey' ? 'intercepted' : 'CONNECT'} rounds`).join(' | ')} |${quiet ? ` then ${settings.quietAfter} s quiet |` : ''} peak (VmHWM) |`)
  out.push(`|---|---|${phases.map(() => '---|').join('')}${quiet ? '---|' : ''}---|`)
  for (const [name, m] of Object.entries(memory)) {
    const last = phases.length === 0 ? m.idle : m[phases.at(-1)]
    out.push(`| ${labels[name]} | ${fixed(m.idle.rss)} | ${phases.map((p) => (participants[name].includes(p) ? fixed(m[p]?.rss) : '-')).join(' | ')} |${quiet ? ` ${fixed(m.quiet?.rss)} |` : ''} ${fixed(last.peak)} |`)
  }
  out.push('\nWhere the RSS of each Node path is, idle and after its last rounds (MiB; bench/rss-parts.mjs):\n')
  out.push('| path | V8\'s heap pages | the main thread\'s malloc | the other threads\' malloc (arenas) | other anonymous | files (the binary, libraries) |\n|---|---|---|---|---|---|')
  for (const [name, m] of Object.entries(memory)) {
    const last = phases.filter((p) => participants[name].includes(p)).at(-1)
    if (m.idle.parts === undefined || last === undefined) continue
    const cell = (part) => `${fixed(m.idle.parts[part])} / ${fixed(m[last].parts[part])}`
    out.push(`| ${labels[name]} | ${['v8Pages', 'mainMalloc', 'threadMalloc', 'otherAnonymous', 'fileBacked'].map(cell).join(' | ')} |`)
  }
  out.push(`\n${settings.rounds} rounds of ${settings.duration} s, ${settings.connections} connections; medians. CPU: user + system from /proc/<pid>/stat over the requests answered (2xx; 200 to CONNECT), Squid's helpers included; the client's (its process, started for each run) and the origin's the same way. Access logs: ${settings.accessLog === 'null' ? '/dev/null' : 'files'}.`)
  return out.join('\n')
}
