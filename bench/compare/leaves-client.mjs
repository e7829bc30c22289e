// Intercepted TLS handshakes to `count` different hosts (127.0.1.1, 127.0.1.2, ... : one new
// leaf each for the proxy to mint), 16 at a time; each tunnel is closed after its handshake.
// Argument: JSON { proxyPort, port, count, ca }. Prints { done, errors, firstError, seconds,
// leavesPerSec, p50, p99 } (handshake latencies in ms, CONNECT included).
import { readFileSync } from 'node:fs'
import { openTunnel, runPool, startTls } from './connect-tunnel.mjs'
import { quantileOfSorted } from './report.mjs'

/** The i-th leaf host: 127.0.1.1 to 127.0.1.250, then 127.0.2.1, ... */
export const leafHost = (i) => `127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`

if (process.argv[2] !== undefined) {
  const { proxyPort, port, count, ca: caPath } = JSON.parse(process.argv[2])
  const ca = readFileSync(caPath)
  const latencies = []
  const started = performance.now()
  const failures = await runPool(count, 16, async (i) => {
    const begin = performance.now()
    const host = leafHost(i)
    const tls = await startTls(await openTunnel(proxyPort, host, port), host, ca)
    latencies.push(performance.now() - begin)
    tls.destroy()
  })
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const quantile = (q) => quantileOfSorted(latencies, q) ?? 0
  process.stdout.write(JSON.stringify({ done: latencies.length, errors: failures.length, firstError: failures[0]?.message, seconds, leavesPerSec: latencies.length / seconds, p50: quantile(0.5), p99: quantile(0.99) }) + '\n')
}
