// `hey` (Debian package hey, Go's net/http) as the client of the http:// forwarding scenario and
// of the `-hey` tunnel scenarios: the same client direct and through every proxy (`-x`),
// `connections` workers for `duration` s.
import { execFile } from 'node:child_process'

/** Parses hey's text summary: 2xx responses per second, p50/p99 in ms, non-2xx and transport errors. */
export function parseHeySummary (text) {
  const seconds = Number(text.match(/Total:\s+([\d.]+) secs/)?.[1])
  const quantile = (q) => Number(text.match(new RegExp(`\\s${q}% in ([\\d.]+) secs`))?.[1]) * 1000
  const statusSection = text.split('Status code distribution:')[1]?.split('Error distribution:') ?? ['', '']
  let ok = 0
  let failed = 0
  for (const [, status, count] of statusSection[0].matchAll(/\[(\d+)\]\s+(\d+) responses/g)) {
    if (status.startsWith('2')) ok += Number(count)
    else failed += Number(count)
  }
  for (const [, count] of (statusSection[1] ?? '').matchAll(/\[(\d+)\]\s/g)) failed += Number(count)
  return { requests: ok, reqPerSec: ok / seconds, p50: quantile(50), p99: quantile(99), mbPerSec: NaN, errors: failed, client: 'hey' }
}

/**
 * Runs hey against `url`, through the proxy on 127.0.0.1:`proxyPort` when given; with
 * `keepAlive` false, every request on a new connection (through a proxy: a new CONNECT tunnel).
 * With `proxyUser` ({ name, password }), hey sends them as Basic `Proxy-Authorization` (Go's
 * Transport does, from the proxy URL's userinfo, on every http:// request and CONNECT).
 * `ratePerConnection`: at most that many requests per second on each connection (hey's `-q`);
 * without it, as many as the proxy answers.
 */
export function runHey (heyPath, url, proxyPort, duration, connections, keepAlive = true, proxyUser, ratePerConnection) {
  const userinfo = proxyUser === undefined ? '' : `${encodeURIComponent(proxyUser.name)}:${encodeURIComponent(proxyUser.password)}@`
  const args = [
    '-z', `${duration}s`, '-c', String(connections),
    ...(ratePerConnection === undefined ? [] : ['-q', String(ratePerConnection)]),
    ...(keepAlive ? [] : ['-disable-keepalive']),
    ...(proxyPort === undefined ? [] : ['-x', `http://${userinfo}127.0.0.1:${proxyPort}`]),
    url
  ]
  return new Promise((resolve, reject) => {
    execFile(heyPath, args, { encoding: 'utf8', timeout: (duration + 120) * 1000, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      if (error !== null) return reject(new Error(`hey: ${error.message}\n${stderr}`))
      resolve(parseHeySummary(stdout))
    })
  })
}
