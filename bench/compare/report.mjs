// Medians over the rounds, and the Markdown tables the comparison prints.
import { SCENARIOS } from './load-scenarios.mjs'

/** Median of the finite numbers in `values` (NaN when there is none). */
export function median (values) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/** The value at quantile `q` (0 to 1) of `sorted` (ascending), the higher one at a boundary; undefined when it is empty. */
export function quantileOfSorted (sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]
}

const fixed = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-')

/**
 * Per scenario and client path (direct or a proxy): medians of the rate, p50, p99, CPU cost and
 * the errors summed; and per proxy the median of the per-round ratios proxy / direct.
 */
export function summarize (runs, peerNames) {
  const summary = {}
  for (const [scenario, byPath] of Object.entries(runs)) {
    const { metric } = SCENARIOS[scenario]
    const entry = { metric, paths: {}, ratios: {} }
    for (const [path, rounds] of Object.entries(byPath)) {
      entry.paths[path] = {
        rate: median(rounds.map((r) => r[metric])),
        p50: median(rounds.map((r) => r.p50)),
        p99: median(rounds.map((r) => r.p99)),
        cpu: median(rounds.map((r) => (metric === 'reqPerSec' ? r.cpuPer1000 : r.cpuPerGiB))),
        errors: rounds.reduce((sum, r) => sum + r.errors, 0),
        accepted: median(rounds.map((r) => r.accepted)),
        rounds: rounds.length
      }
    }
    entry.roundRatios = {}
    for (const peer of peerNames) {
      const direct = byPath.direct ?? []
      const proxied = byPath[peer] ?? []
      entry.roundRatios[peer] = proxied.map((r, i) => r[metric] / direct[i]?.[metric])
      entry.ratios[peer] = median(entry.roundRatios[peer])
    }
    summary[scenario] = entry
  }
  return summary
}

/** The issue's table: ratios through each proxy / direct, memory, and the targets. */
export function ratioTable (summary, peers, memory) {
  const lines = [
    `| scenario | ${peers.map((p) => p.heading).join(' | ')} | target |`,
    `|---|${peers.map(() => '---|').join('')}---|`
  ]
  for (const [scenario, entry] of Object.entries(summary)) {
    lines.push(`| ${SCENARIOS[scenario].label} | ${peers.map((p) => fixed(entry.ratios[p.name], 2)).join(' | ')} | >= ${SCENARIOS[scenario].target.toFixed(2)} |`)
  }
  lines.push(`| RSS after the run | ${peers.map((p) => `${fixed(memory[p.name]?.rss)} MiB`).join(' | ')} | <= 64 MiB |`)
  lines.push(`| peak RSS | ${peers.map((p) => `${fixed(memory[p.name]?.peak)} MiB`).join(' | ')} | - |`)
  return lines.join('\n')
}

/** Medians behind the ratios: rate, latencies, proxy CPU, errors, for each client path. */
export function detailTable (summary, paths) {
  const lines = [
    '| scenario | path | median rate | p50 ms | p99 ms | proxy CPU-s per 1,000 requests (downloads: per GiB) | errors | TCP connections accepted per run (median) |',
    '|---|---|---|---|---|---|---|---|'
  ]
  for (const [scenario, entry] of Object.entries(summary)) {
    const unit = entry.metric === 'reqPerSec' ? 'req/s' : 'MB/s'
    for (const path of paths) {
      const values = entry.paths[path.name]
      if (values === undefined) continue
      lines.push(`| ${SCENARIOS[scenario].label} | ${path.heading} | ${fixed(values.rate)} ${unit} | ${fixed(values.p50, 1)} | ${fixed(values.p99, 1)} | ${path.name === 'direct' ? '-' : fixed(values.cpu, 3)} | ${values.errors} | ${fixed(values.accepted)} |`)
    }
  }
  return lines.join('\n')
}

/**
 * Every round's ratio, to show how noisy the medians are, with the spread: how far the lowest
 * round fell below the median, in percent.
 */
export function roundsTable (summary, peers) {
  const lines = [`| scenario | ${peers.map((p) => p.heading).join(' | ')} |`, `|---|${peers.map(() => '---|').join('')}`]
  const spread = (ratios) => {
    const finite = ratios.filter(Number.isFinite)
    return finite.length === 0 ? '' : ` (lowest ${fixed((1 - Math.min(...finite) / median(finite)) * 100)}% below the median)`
  }
  for (const [scenario, entry] of Object.entries(summary)) {
    lines.push(`| ${SCENARIOS[scenario].label} | ${peers.map((p) => (entry.roundRatios[p.name] ?? []).map((r) => fixed(r, 2)).join(' / ') + spread(entry.roundRatios[p.name] ?? [])).join(' | ')} |`)
  }
  return lines.join('\n')
}

/** The extra measurements (SSE, idle tunnels, HTTP/2 CONNECT, leaves), one line each. */
export function extrasTable (extras) {
  const lines = ['| measurement | path | result | errors |', '|---|---|---|---|']
  for (const row of extras) lines.push(`| ${row.measurement} | ${row.path} | ${row.result} | ${row.errors ?? 0} |`)
  return lines.join('\n')
}
