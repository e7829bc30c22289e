// Counters and the report of the soak run (bench/soak.mjs).
const MiB = 1024 * 1024
const VIOLATIONS = ['hashMismatch', 'truncatedSuccess', 'wrongOutcome', 'idleOverrun', 'hang', 'harnessError']

/** Counters of one soak run; `report()` renders them with the memory and descriptor samples. */
export function createStats () {
  let s
  const reset = () => {
    s = {
      requests: {},
      tunnels: {},
      faults: {},
      bytesVerified: 0,
      bodiesVerified: 0,
      violations: Object.fromEntries(VIOLATIONS.map((kind) => [kind, 0])),
      violationSamples: [],
      unexpected: {},
      idleClosed: 0,
      idleLongest: 0,
      idleShortest: Infinity
    }
  }
  reset()
  const bump = (table, key) => { table[key] = (table[key] ?? 0) + 1 }
  const sum = (table) => Object.values(table).reduce((a, b) => a + b, 0)
  const list = (table) => Object.entries(table).map(([key, n]) => `${key} ${n}`).join(', ') || 'none'

  return {
    reset,
    request: (kind) => bump(s.requests, kind),
    tunnel: (kind) => bump(s.tunnels, kind),
    fault: (kind) => bump(s.faults, kind),
    verified (bytes) { s.bytesVerified += bytes; s.bodiesVerified++ },
    violation (kind, detail) {
      s.violations[kind]++
      if (s.violationSamples.length < 20) s.violationSamples.push(`${kind}: ${detail}`)
    },
    unexpected (scenario, error) {
      const entry = s.unexpected[scenario] ?? (s.unexpected[scenario] = { count: 0, samples: new Set() })
      entry.count++
      if (entry.samples.size < 3) entry.samples.add(String(error?.code ?? error?.message ?? error).slice(0, 160))
    },
    idleClosed (ms) {
      s.idleClosed++
      s.idleLongest = Math.max(s.idleLongest, ms)
      s.idleShortest = Math.min(s.idleShortest, ms)
    },
    summaryLine: () => `${sum(s.requests)} requests, ${sum(s.tunnels)} tunnels, ${sum(s.faults)} faults, ${(s.bytesVerified / MiB).toFixed(0)} MiB verified, ${sum(s.violations)} violations, ${Object.values(s.unexpected).reduce((a, e) => a + e.count, 0)} unexpected errors`,
    failures: () => s.violationSamples.slice(),
    report ({ minutes, loadSeconds, clients, tunnelIdleTimeout, idleMargin, start, peak, end, node, cpus }) {
      const mib = (n) => (n / MiB).toFixed(1)
      const unexpected = Object.entries(s.unexpected).map(([scenario, e]) => `${scenario} ${e.count} (${[...e.samples].join('; ')})`).join(', ') || 'none'
      return [
        `Soak run: ${minutes} min requested, ${loadSeconds.toFixed(0)} s of load, ${clients} concurrent clients, node ${node}, ${cpus} cores; tunnelIdleTimeout ${tunnelIdleTimeout} ms (overrun if silent > ${tunnelIdleTimeout + idleMargin} ms)`,
        '',
        '| measure | value |',
        '| --- | --- |',
        `| requests (http:// forwarded, intercepted) | ${sum(s.requests)} (${list(s.requests)}) |`,
        `| tunnels opened (HTTP/1.1, HTTP/2 CONNECT) | ${sum(s.tunnels)} (${list(s.tunnels)}) |`,
        `| faults injected | ${sum(s.faults)} (${list(s.faults)}) |`,
        `| bodies verified by SHA-256 | ${s.bodiesVerified}, ${mib(s.bytesVerified)} MiB |`,
        `| violations | ${sum(s.violations)} (${list(s.violations)}) |`,
        `| unexpected client errors | ${unexpected} |`,
        `| idle tunnels closed by the proxy | ${s.idleClosed}, silence before close ${s.idleClosed === 0 ? '-' : `${s.idleShortest}-${s.idleLongest}`} ms |`,
        `| tunnels past their idle timeout | ${s.violations.idleOverrun} |`,
        `| heap used after GC, MiB (start / peak / end) | ${mib(start.heapUsed)} / ${mib(peak.heapUsed)} / ${mib(end.heapUsed)} |`,
        `| RSS, MiB (start / peak / end) | ${mib(start.rss)} / ${mib(peak.rss)} / ${mib(end.rss)} |`,
        `| open file descriptors (start / peak / end) | ${start.fds} / ${peak.fds} / ${end.fds} |`,
        `| open tunnels at the proxy (start / peak / end) | ${start.activeTunnels} / ${peak.activeTunnels} / ${end.activeTunnels} |`
      ].join('\n')
    }
  }
}
