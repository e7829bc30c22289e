// The comparison harness (`npm run bench:compare`): nginx (or bench/origin.mjs) as origin, and
// each scenario direct and through ours (dist/, the ready-to-run server), Squid (ssl_bump) and
// mitmproxy (mitmdump) where installed, in the same run, alternating, for several rounds. Prints
// Markdown tables (ratios through proxy / direct, medians behind them, extra measurements) and
// writes JSON. Knobs: see bench/compare/settings.mjs and docs/benchmarks.md.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { makeCa, makeLeaf } from './pki.mjs'
import { idleTunnels, mintLeaves, sseFirstByte, tunnelLoad } from './compare/extras.mjs'
import { leafHost } from './compare/leaves-client.mjs'
import { runLoad, SCENARIOS } from './compare/load-scenarios.mjs'
import { PLAIN_HOST, startOrigin, TLS_HOST } from './compare/origin.mjs'
import { PEERS, startOurs, startPeer } from './compare/peers.mjs'
import { cpuSeconds, memoryMiB, startProcess, stopProcess } from './compare/processes.mjs'
import { detailTable, extrasTable, median, ratioTable, roundsTable, summarize } from './compare/report.mjs'
import { readSettings } from './compare/settings.mjs'
import { detectTools, versionOf } from './compare/tools.mjs'

const settings = readSettings()
const print = (line = '') => console.log(line)
const fixed = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-')
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
  print(`# Proxy comparison (${new Date().toISOString()})\n`)
  print(`machine: ${host.nproc} cores (${host.model}), Node ${host.node}, load average ${host.loadAverage.join(' ')}, ulimit -n ${host.nofile}`)
  print(`settings: ${settings.rounds} rounds, ${settings.duration} s per run, ${settings.connections} connections (downloads: 1), scenarios ${settings.scenarios.join(',')}, peers ${settings.peers.join(',')}`)
  if (tools.missing.length > 0) print(`not installed: ${tools.missing.join(', ')} (install with: ${tools.installHint}); their peers are skipped${tools.found.nginx === undefined ? ', the origin is bench/origin.mjs' : ''}`)

  if (settings.httpClient === 'hey') {
    if (tools.found.hey === undefined) print('http:// forwarding uses bench/load.mjs: hey is not installed')
    else settings.heyPath = tools.found.hey
  }
  print(`client: ${settings.heyPath === undefined ? 'bench/load.mjs (undici)' : 'hey for http:// forwarding, bench/load.mjs (undici) for the rest'}`)
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

  const directory = mkdtempSync(join(tmpdir(), 'ffp-compare-'))
  try {
    const destinationCa = makeCa(directory, 'destination-ca')
    const operatorCa = makeCa(directory, 'operator-ca')
    const pki = {
      destinationCa,
      operatorCa,
      origin: makeLeaf(directory, 'origin', destinationCa, [TLS_HOST, PLAIN_HOST]),
      proxy: makeLeaf(directory, 'proxy', destinationCa, [PLAIN_HOST])
    }
    const origin = await startOrigin(settings.origin === 'nginx' ? tools.found.nginx : undefined, directory, pki.origin)
    processes.push(...origin.processes)
    const versions = { origin: origin.kind === 'nginx' ? versionOf(tools.found.nginx, ['-v']) : `bench/origin.mjs (Node ${process.version})` }
    const context = { directory, pki, tools: tools.found, maxTunnels: 20_000 }
    const running = []
    for (const peer of peers) {
      try {
        const started = await startPeer(peer, context)
        processes.push(started.started)
        running.push(started)
      } catch (error) {
        print(`${peer.label} did not start, skipped: ${error.message}`)
        if (peer.name === 'ours' || settings.smoke) problems.push(`${peer.label} did not start`)
      }
    }
    if (tools.found.squid !== undefined) versions.squid = versionOf(tools.found.squid, ['-v'])
    if (tools.found.mitmdump !== undefined) versions.mitmproxy = versionOf(tools.found.mitmdump, ['--version'])
    print(`origin: ${versions.origin}; proxies: ${running.map((r) => r.peer.label).join(', ') || 'none'}\n`)

    const runs = await runLoadScenarios(origin, pki, running)
    const memory = Object.fromEntries(running.map((r) => [r.peer.name, memoryMiB(r.pid)]))
    const extras = await runExtras(origin, pki, running, context, idleCount)

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
    if (settings.jsonPath !== '') {
      mkdirSync(dirname(settings.jsonPath), { recursive: true })
      writeFileSync(settings.jsonPath, JSON.stringify({ date: new Date().toISOString(), machine: host, settings, versions, summary, memory, extras, runs }, null, 2) + '\n')
      print(`\nJSON: ${settings.jsonPath}`)
    }
  } finally {
    for (const started of processes.reverse()) await stopProcess(started)
    rmSync(directory, { recursive: true, force: true })
  }
  if (problems.length > 0) {
    console.error(`FAILED: ${problems.join('; ')}`)
    process.exitCode = 1
  }
}

function headingOf (peer, versions) {
  const version = versions[peer.name]?.match(/\d+\.\d+(\.\d+)?/)?.[0]
  if (peer.name === 'squid') return `Squid ${version ?? ''} ssl_bump`.replace('  ', ' ')
  if (peer.name === 'mitmproxy') return `mitmproxy ${version ?? ''}`.trim()
  return 'ours'
}

/** Every load scenario, every round, direct and through every proxy; the order rotates per round. */
async function runLoadScenarios (origin, pki, running) {
  const runs = {}
  const scenarios = settings.scenarios.filter((s) => s in SCENARIOS)
  const paths = [{ name: 'direct' }, ...running.map((r) => ({ name: r.peer.name, port: r.port, pid: r.pid }))]
  for (let round = 0; round < settings.rounds; round++) {
    const order = paths.map((_, i) => paths[(i + round) % paths.length])
    for (const scenario of scenarios) {
      runs[scenario] ??= {}
      for (const path of order) {
        const before = path.pid === undefined ? 0 : cpuSeconds(path.pid)
        let result
        try {
          result = await runLoad(scenario, origin, pki, settings, path.port)
        } catch (error) {
          result = { requests: 0, reqPerSec: NaN, mbPerSec: NaN, p50: NaN, p99: NaN, errors: 1, failure: error.message.split('\n')[0] }
        }
        const cpu = path.pid === undefined ? NaN : cpuSeconds(path.pid) - before
        const gib = result.mbPerSec * settings.duration / 1024
        const record = { round, ...result, cpuSeconds: cpu, cpuPer1000: cpu / result.requests * 1000, cpuPerGiB: cpu / gib }
        ;(runs[scenario][path.name] ??= []).push(record)
        const metric = SCENARIOS[scenario].metric
        print(`round ${round + 1} ${scenario} ${path.name}: ${fixed(result[metric])} ${metric === 'reqPerSec' ? 'req/s' : 'MB/s'}, p99 ${fixed(result.p99, 1)} ms, errors ${result.errors}${result.failure ? ` (${result.failure})` : ''}`)
        if (result.requests === 0 || (settings.smoke && result.errors > 0)) problems.push(`${scenario} ${path.name}: ${result.requests} requests, ${result.errors} errors`)
      }
    }
  }
  print()
  return runs
}

async function attempt (rows, measurement, path, run) {
  try {
    const row = await run()
    rows.push({ measurement, path, ...row })
    print(`${measurement} ${path}: ${row.result}, errors ${row.errors ?? 0}`)
    if (settings.smoke && (row.errors ?? 0) > 0) problems.push(`${measurement} ${path}: ${row.errors} errors (${row.firstError})`)
  } catch (error) {
    rows.push({ measurement, path, result: `failed: ${error.message.split('\n')[0]}`, errors: 1 })
    print(`${measurement} ${path}: failed: ${error.message}`)
    if (path.startsWith('ours') || settings.smoke) problems.push(`${measurement} ${path} failed`)
  }
}

/** SSE and idle tunnels for every proxy; HTTP/2 CONNECT and leaves for ours (a second instance). */
async function runExtras (origin, pki, running, context, idleCount) {
  const rows = []
  const want = (name) => settings.scenarios.includes(name)
  if (want('sse')) {
    for (const path of [{ peer: { name: 'direct', label: 'direct' } }, ...running]) {
      await attempt(rows, 'SSE first byte, http:// forwarding', path.peer.label, async () => {
        const r = await sseFirstByte(origin.ssePort, path.port, settings.sseSamples)
        return { ...r, result: `p50 ${fixed(r.p50, 1)} ms, p99 ${fixed(r.p99, 1)} ms (${r.samples} samples)` }
      })
    }
  }
  // Each idle measurement runs on a fresh instance: memory a proxy freed after the load
  // scenarios or an earlier measurement would otherwise hide the tunnels' cost.
  for (const [name, count, intercepted] of [['idle', idleCount, false], ['idle-intercept', settings.idleIntercepted, true]]) {
    if (!want(name)) continue
    for (const proxy of running) {
      const measurement = intercepted ? `${count} idle intercepted tunnels (TLS both sides, one request each)` : `${count} idle opaque tunnels`
      await attempt(rows, measurement, proxy.peer.label, async () => {
        const fresh = await startPeer(proxy.peer, context)
        try {
          const r = await idleTunnels({
            pid: fresh.pid,
            proxyPort: fresh.port,
            count,
            ...(intercepted ? { host: TLS_HOST, port: origin.httpsPort, ca: pki.operatorCa.certPath } : { host: PLAIN_HOST, port: origin.httpPort })
          })
          return { ...r, result: `${fixed(r.kibPerTunnel, 1)} KiB per tunnel (fresh instance; RSS ${fixed(r.rssBefore)} MiB with the first tenth open → ${fixed(r.rssWith)} MiB with all ${r.opened}, opened in ${fixed(r.seconds, 1)} s)` }
        } finally {
          await stopProcess(fresh.started)
        }
      })
    }
  }
  if (want('h2') || want('leaves')) {
    const leafCount = settings.leaves
    let extra
    try {
      extra = await startOurs({ ...context, name: 'ours-extras', interceptHosts: Array.from({ length: leafCount }, (_, i) => leafHost(i)), tlsListener: { cert: context.pki.proxy.certPath, key: context.pki.proxy.keyPath } })
      processes.push(extra.started)
    } catch (error) {
      rows.push({ measurement: 'HTTP/2 CONNECT and leaves', path: 'ours', result: `failed: ${error.message.split('\n')[0]}`, errors: 1 })
      problems.push('ours-extras did not start')
      return rows
    }
    if (want('h2')) await runHttp2(rows, extra, pki)
    if (want('leaves')) {
      const before = memoryMiB(extra.pid).rss
      const cpuBefore = cpuSeconds(extra.pid)
      await attempt(rows, `leaves minted for ${leafCount} new hosts (intercepted handshakes, 16 at a time)`, 'ours', async () => {
        const r = await mintLeaves(extra.port, origin.httpsPort, leafCount, pki.operatorCa.certPath)
        const cpu = cpuSeconds(extra.pid) - cpuBefore
        const rss = memoryMiB(extra.pid).rss
        return { ...r, cpuSeconds: cpu, result: `${fixed(r.leavesPerSec)} leaves/s, handshake p50 ${fixed(r.p50, 1)} ms, p99 ${fixed(r.p99, 1)} ms, ${fixed(cpu * 1000 / r.done, 2)} CPU-ms per leaf, RSS ${fixed(before)} → ${fixed(rss)} MiB` }
      })
    }
  }
  return rows
}

async function runHttp2 (rows, extra, pki) {
  const destinations = startProcess(process.execPath, [new URL('./tcp-origin.mjs', import.meta.url).pathname])
  processes.push(destinations)
  const [line] = await new Promise((resolve, reject) => {
    destinations.child.stdout.once('data', (chunk) => resolve([chunk.toString()]))
    destinations.child.once('exit', (code) => reject(new Error(`tcp-origin exited (${code})`)))
  })
  const ports = JSON.parse(line)
  const base = { proxyPort: extra.tlsPort, ca: pki.destinationCa.certPath, sessions: 1 }
  for (const [measurement, spec, metric] of [
    [`tunnels opened, echo 16 B, closed; ${settings.connections} at a time`, { scenario: 'open', destPort: ports.echo, concurrency: settings.connections }, 'tunnelsPerSec'],
    ['64 MiB downloads through 1 tunnel', { scenario: 'download', destPort: ports.blast, concurrency: 1 }, 'mbPerSec']
  ]) {
    const results = {}
    for (const protocol of ['h1', 'h2']) {
      await attempt(rows, `${measurement} (TLS listener)`, `ours, ${protocol === 'h1' ? 'HTTP/1.1 CONNECT' : 'HTTP/2 CONNECT'}`, async () => {
        const rounds = []
        for (let round = 0; round < settings.rounds; round++) rounds.push(await tunnelLoad({ ...base, ...spec, protocol }, settings.duration))
        const rate = median(rounds.map((r) => r[metric]))
        results[protocol] = rate
        return { rounds, errors: rounds.reduce((sum, r) => sum + r.errors, 0), result: `${fixed(rate)} ${metric === 'mbPerSec' ? 'MB/s' : 'tunnels/s'}${metric === 'tunnelsPerSec' ? `, p99 ${fixed(median(rounds.map((r) => r.p99)), 1)} ms` : ''}${protocol === 'h2' ? ` (${fixed(results.h2 / results.h1, 2)} × HTTP/1.1)` : ''}` }
      })
    }
  }
}

await main()
