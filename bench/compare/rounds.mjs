// The load scenarios' rounds: every scenario direct and through every proxy, with the proxy's
// CPU time around each run.
import { runLoad, SCENARIOS } from './load-scenarios.mjs'
import { cpuSeconds, tcpPassiveOpens } from './processes.mjs'

const fixed = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-')

/** Every load scenario, every round, direct and through every proxy; the order rotates per round. */
export async function runLoadScenarios ({ settings, problems, print }, origin, pki, running) {
  const runs = {}
  const scenarios = settings.scenarios.filter((s) => s in SCENARIOS)
  const paths = [{ name: 'direct' }, ...running.map((r) => ({ name: r.peer.name, port: r.port, pid: r.pid }))]
  for (let round = 0; round < settings.rounds; round++) {
    const order = paths.map((_, i) => paths[(i + round) % paths.length])
    for (const scenario of scenarios) {
      runs[scenario] ??= {}
      for (const path of order) {
        const before = path.pid === undefined ? 0 : cpuSeconds(path.pid)
        const acceptedBefore = tcpPassiveOpens()
        let result
        try {
          result = await runLoad(scenario, origin, pki, settings, path.port)
        } catch (error) {
          result = { requests: 0, reqPerSec: NaN, mbPerSec: NaN, p50: NaN, p99: NaN, errors: 1, failure: error.message.split('\n')[0] }
        }
        const cpu = path.pid === undefined ? NaN : cpuSeconds(path.pid) - before
        // Every TCP connection accepted on the machine during the run: direct, the origin's; through
        // a proxy, the proxy's from the client plus the origin's from the proxy. A client that
        // opens and abandons spare tunnels shows up here long before it shows in req/s.
        const accepted = tcpPassiveOpens() - acceptedBefore
        const gib = result.mbPerSec * settings.duration / 1024
        const record = { round, ...result, accepted, cpuSeconds: cpu, cpuPer1000: cpu / result.requests * 1000, cpuPerGiB: cpu / gib }
        ;(runs[scenario][path.name] ??= []).push(record)
        const metric = SCENARIOS[scenario].metric
        print(`round ${round + 1} ${scenario} ${path.name}: ${fixed(result[metric])} ${metric === 'reqPerSec' ? 'req/s' : 'MB/s'}, p99 ${fixed(result.p99, 1)} ms, errors ${result.errors}, ${accepted} connections accepted${result.failure ? ` (${result.failure})` : ''}`)
        if (result.requests === 0 || (settings.smoke && result.errors > 0)) problems.push(`${scenario} ${path.name}: ${result.requests} requests, ${result.errors} errors`)
      }
    }
  }
  print()
  return runs
}
