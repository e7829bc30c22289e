// The comparison harness (`npm run bench:compare`): nginx (or bench/origin.mjs) as origin, and
// each scenario direct and through ours (dist/, the ready-to-run server), Squid (ssl_bump) and
// mitmproxy (mitmdump) where installed, in the same run, alternating, for several rounds. Prints
// Markdown tables (ratios through proxy / direct, medians behind them, extra measurements) and
// writes JSON. Knobs: see bench/compare/settings.mjs and docs/benchmarks.md.
// `BENCH_SUITE=per-request npm run bench:compare` runs the per-request suite instead (floors,
// the bin with the minimal and the full configuration, Squid with auth and access log; hey;
// CONNECT cost; memory): see bench/compare/per-request.mjs.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { makeLeaf } from './pki.mjs'
import { runExtras } from './compare/extra-runs.mjs'
import { makeOriginPki, PLAIN_HOST, startOrigin } from './compare/origin.mjs'
import { runPerRequestSuite, suiteTables } from './compare/per-request.mjs'
import { PEERS, startPeers } from './compare/peers.mjs'
import { memoryMiB, stopProcess } from './compare/processes.mjs'
import { detailTable, extrasTable, ratioTable, roundsTable, summarize } from './compare/report.mjs'
import { runLoadScenarios } from './compare/rounds.mjs'
import { SCENARIOS } from './compare/load-scenarios.mjs'
import { readSettings } from './compare/settings.mjs'
import { detectTools, versionOf } from './compare/tools.mjs'

const settings = readSettings()
const print = (line = '') => console.log(line)
const problems = [] // failures that make the run exit 1 (every failure in a smoke run)
const processes = []

function machine () {
  const model = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'))?.split(':')[1]?.trim() ?? 'unknown'
  const nofile = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim())
  return { nproc: cpus().length, model, node: process.version, loadAverage: loadavg().map((n) => Number(n.toFixed(2))), nofile }
}

async function main () {
  const tools = detectTools()
  const host = machine()
  const perRequest = settings.suite === 'per-request'
  print(`# ${perRequest ? 'Per-request cost' : 'Proxy comparison'} (${new Date().toISOString()})\n`)
  print(`machine: ${host.nproc} cores (${host.model}), Node ${host.node}, load average ${host.loadAverage.join(' ')}, ulimit -n ${host.nofile}`)
  print(`settings: ${settings.rounds} rounds, ${settings.duration} s per run, ${settings.connections} connections${perRequest ? `, access logs ${settings.accessLog === 'null' ? 'to /dev/null' : 'to files'}` : ' (downloads: 1)'}, scenarios ${settings.scenarios.join(',')}, ${perRequest ? 'paths' : 'peers'} ${settings.peers.join(',')}${settings.oursNodeArgs.length === 0 ? '' : `, ${perRequest ? 'ours, the floors and the plugin' : 'ours'} started with node ${settings.oursNodeArgs.join(' ')}`}`)
  if (tools.note !== '') print(tools.note)
  if (tools.missing.length > 0) print(`not installed: ${tools.missing.join(', ')} (install with: ${tools.installHint}); what needs them is skipped${tools.found.nginx === undefined ? ', the origin is bench/origin.mjs' : ''}`)
  if (perRequest) return perRequestMain(tools, host)

  if (settings.httpClient === 'hey') {
    if (tools.found.hey === undefined) print('http:// forwarding uses bench/load.mjs: hey is not installed')
    else settings.heyPath = tools.found.hey
  }
  // The -hey tunnel scenarios need hey; tunnel-hey needs nginx as the origin too (TLS on 127.0.0.1).
  const heyMissing = (scenario) => tools.found.hey === undefined ? 'hey is not installed' : scenario === 'tunnel-hey' && (settings.origin !== 'nginx' || tools.found.nginx === undefined) ? 'it needs nginx as the origin' : undefined
  for (const scenario of settings.scenarios.filter((s) => SCENARIOS[s]?.hey !== undefined && heyMissing(s) !== undefined)) {
    print(`skipping ${scenario}: ${heyMissing(scenario)}`)
    settings.scenarios = settings.scenarios.filter((s) => s !== scenario)
  }
  print(`client: ${settings.heyPath === undefined ? 'bench/load.mjs (undici)' : 'hey for http:// forwarding and the -hey scenarios, bench/load.mjs (undici) for the rest'}`)
  const peers = []
  for (const name of settings.peers) {
    const peer = PEERS.find((p) => p.name === name)
    const absent = peer.needs.filter((tool) => tools.found[tool] === undefined)
    if (absent.length > 0) print(`skipping ${peer.label}: ${absent.join(', ')} not installed`)
    else peers.push(peer)
  }
  // Each proxied idle tunnel holds two descriptors in the proxy; leave room for the rest.
  const idleCount = Math.min(settings.idleTunnels, Math.floor((host.nofile - 300) / 2))
  if (idleCount < settings.idleTunnels) print(`ulimit -n ${host.nofile} allows ${idleCount} idle tunnels, not ${settings.idleTunnels}: run "ulimit -n 65536" first (needs a hard limit that high) for the full count`)

  await withOrigin(tools, async ({ directory, pki, origin, versions }) => {
    const context = { directory, pki, tools: tools.found, maxTunnels: 20_000, nodeArgs: settings.oursNodeArgs }
    const running = await startPeers(peers, context, processes, (peer, error) => {
      print(`${peer.label} did not start, skipped: ${error.message}`)
      if (peer.name === 'ours' || settings.smoke) problems.push(`${peer.label} did not start`)
    })
    if (tools.found.mitmdump !== undefined) versions.mitmproxy = versionOf(tools.found.mitmdump, ['--version'])
    print(`origin: ${versions.origin}; proxies: ${running.map((r) => r.peer.label).join(', ') || 'none'}\n`)

    const run = { settings, problems, processes, print }
    const runs = await runLoadScenarios(run, origin, pki, running)
    const memory = Object.fromEntries(running.map((r) => [r.peer.name, memoryMiB(r.pid)]))
    const extras = await runExtras(run, { origin, pki, running, context, idleCount })

    const headings = running.map((r) => ({ name: r.peer.name, heading: headingOf(r.peer, versions) }))
    const summary = summarize(runs, running.map((r) => r.peer.name))
    if (Object.keys(summary).length > 0 || running.length > 0) {
      print('## Through proxy / direct (median of the per-round ratios)\n')
      print(ratioTable(summary, headings, memory))
      print('\n## Ratio of each round (in run order)\n')
      print(roundsTable(summary, headings))
      print('\n## Medians\n')
      print(detailTable(summary, [{ name: 'direct', heading: 'direct' }, ...headings]))
    }
    if (extras.length > 0) {
      print('\n## Extra measurements\n')
      print(extrasTable(extras))
    }
    host.loadAverageEnd = loadavg().map((n) => Number(n.toFixed(2)))
    print(`\nload average at the end: ${host.loadAverageEnd.join(' ')}`)
    writeJson({ date: new Date().toISOString(), machine: host, settings, versions, summary, memory, extras, runs })
  })
}

/**
 * The per-request suite (BENCH_SUITE=per-request): hey for every load scenario, so it needs hey,
 * unless BENCH_HTTP_CLIENT is node (bench/load.mjs, undici), curl or chromium; its paths, rounds
 * and tables are in bench/compare/per-request.mjs.
 */
async function perRequestMain (tools, host) {
  const client = { node: 'bench/load.mjs (undici)', curl: 'curl --parallel', chromium: 'headless Chromium, fetch() in a page', hey: 'hey' }[settings.httpClient]
  if (settings.httpClient !== 'node') {
    const path = tools.found[settings.httpClient]
    if (path === undefined) {
      problems.push(`BENCH_HTTP_CLIENT=${settings.httpClient} needs ${settings.httpClient} (apt-get install ${settings.httpClient}), or BENCH_HTTP_CLIENT=node`)
      return
    }
    settings[`${settings.httpClient}Path`] = path
  }
  print(`client: ${client} (${settings.connections} connections, keep-alive) for http:// and intercepted requests; bench/compare/connect-client.mjs for CONNECT`)
  await withOrigin(tools, async ({ directory, pki, origin, versions }) => {
    const context = { directory, pki, tools: tools.found, maxTunnels: 20_000, nodeArgs: settings.oursNodeArgs, accessLog: settings.accessLog }
    print(`origin: ${versions.origin}${versions.squid === undefined ? '' : `; ${versions.squid}`}`)
    const result = await runPerRequestSuite({ settings, problems, processes, print }, { origin, context, tools: tools.found })
    print('## Per-request cost\n')
    print(suiteTables(result, settings))
    host.loadAverageEnd = loadavg().map((n) => Number(n.toFixed(2)))
    print(`\nload average at the end: ${host.loadAverageEnd.join(' ')}`)
    writeJson({ date: new Date().toISOString(), suite: 'per-request', machine: host, settings, versions, ...result })
  })
}

/**
 * Makes the test PKI and starts the origin in a temporary folder, runs `body`, then stops every
 * process started and removes the folder.
 */
async function withOrigin (tools, body) {
  const directory = mkdtempSync(join(tmpdir(), 'ffp-compare-'))
  try {
    const originPki = makeOriginPki(directory)
    const pki = { ...originPki, proxy: makeLeaf(directory, 'proxy', originPki.destinationCa, [PLAIN_HOST]) }
    const origin = await startOrigin(settings.origin === 'nginx' ? tools.found.nginx : undefined, directory, pki.origin)
    processes.push(...origin.processes)
    const versions = { origin: origin.kind === 'nginx' ? versionOf(tools.found.nginx, ['-v']) : `bench/origin.mjs (Node ${process.version})` }
    if (tools.found.squid !== undefined) versions.squid = versionOf(tools.found.squid, ['-v'])
    await body({ directory, pki, origin, versions })
  } finally {
    for (const started of processes.reverse()) await stopProcess(started)
    rmSync(directory, { recursive: true, force: true })
  }
}

function writeJson (data) {
  if (settings.jsonPath === '') return
  mkdirSync(dirname(settings.jsonPath), { recursive: true })
  writeFileSync(settings.jsonPath, JSON.stringify(data, null, 2) + '\n')
  print(`\nJSON: ${settings.jsonPath}`)
}

function headingOf (peer, versions) {
  const version = versions[peer.name]?.match(/\d+\.\d+(\.\d+)?/)?.[0]
  if (peer.name === 'squid') return `Squid ${version ?? ''} ssl_bump`.replace('  ', ' ')
  if (peer.name === 'mitmproxy') return `mitmproxy ${version ?? ''}`.trim()
  if (peer.name === 'chained') return 'ours through ours'
  return 'ours'
}

await main()
if (problems.length > 0) {
  console.error(`FAILED: ${problems.join('; ')}`)
  process.exitCode = 1
}
