// The extra measurements of the comparison: SSE first byte and idle tunnels for every proxy;
// HTTP/2 CONNECT and leaves for new hosts on a second instance of ours.
import { fileURLToPath } from 'node:url'
import { idleTunnels, mintLeaves, sseFirstByte, tunnelLoad } from './extras.mjs'
import { leafHost } from './leaves-client.mjs'
import { PLAIN_HOST, TLS_HOST } from './origin.mjs'
import { startOurs, startPeer } from './peers.mjs'
import { cpuSeconds, memoryMiB, startProcess, stopProcess } from './processes.mjs'
import { median } from './report.mjs'

const fixed = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-')
const TCP_ORIGIN = fileURLToPath(new URL('../tcp-origin.mjs', import.meta.url))

async function attempt ({ settings, problems, print }, rows, measurement, path, measure) {
  try {
    const row = await measure()
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
export async function runExtras (run, { origin, pki, running, context, idleCount }) {
  const { settings, problems, processes } = run
  const rows = []
  const want = (name) => settings.scenarios.includes(name)
  if (want('sse')) {
    for (const path of [{ peer: { name: 'direct', label: 'direct' } }, ...running]) {
      await attempt(run, rows, 'SSE first byte, http:// forwarding', path.peer.label, async () => {
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
      await attempt(run, rows, measurement, proxy.peer.label, async () => {
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
          for (const started of [fresh.started, ...fresh.extraProcesses]) await stopProcess(started)
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
    if (want('h2')) await runHttp2(run, rows, extra, pki)
    if (want('leaves')) {
      const before = memoryMiB(extra.pid).rss
      const cpuBefore = cpuSeconds(extra.pid)
      await attempt(run, rows, `leaves minted for ${leafCount} new hosts (intercepted handshakes, 16 at a time)`, 'ours', async () => {
        const r = await mintLeaves(extra.port, origin.httpsPort, leafCount, pki.operatorCa.certPath)
        const cpu = cpuSeconds(extra.pid) - cpuBefore
        const rss = memoryMiB(extra.pid).rss
        return { ...r, cpuSeconds: cpu, result: `${fixed(r.leavesPerSec)} leaves/s, handshake p50 ${fixed(r.p50, 1)} ms, p99 ${fixed(r.p99, 1)} ms, ${fixed(cpu * 1000 / r.done, 2)} CPU-ms per leaf, RSS ${fixed(before)} → ${fixed(rss)} MiB` }
      })
    }
  }
  return rows
}

async function runHttp2 (run, rows, extra, pki) {
  const { settings, processes } = run
  const destinations = startProcess(process.execPath, [TCP_ORIGIN])
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
      await attempt(run, rows, `${measurement} (TLS listener)`, `ours, ${protocol === 'h1' ? 'HTTP/1.1 CONNECT' : 'HTTP/2 CONNECT'}`, async () => {
        const rounds = []
        for (let round = 0; round < settings.rounds; round++) rounds.push(await tunnelLoad({ ...base, ...spec, protocol }, settings.duration))
        const rate = median(rounds.map((r) => r[metric]))
        results[protocol] = rate
        return { rounds, errors: rounds.reduce((sum, r) => sum + r.errors, 0), result: `${fixed(rate)} ${metric === 'mbPerSec' ? 'MB/s' : 'tunnels/s'}${metric === 'tunnelsPerSec' ? `, p99 ${fixed(median(rounds.map((r) => r.p99)), 1)} ms` : ''}${protocol === 'h2' ? ` (${fixed(results.h2 / results.h1, 2)} × HTTP/1.1)` : ''}` }
      })
    }
  }
}
