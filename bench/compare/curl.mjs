// curl (Debian package curl, libcurl's multi interface) as a client of the per-request suite:
// `--parallel` transfers over at most `connections` keep-alive connections, the way a script
// that hands curl a list of URLs runs, through a proxy (`-x`, `--proxy-user`) or direct.
import { spawn } from 'node:child_process'
import { median, quantileOfSorted } from './report.mjs'

/** The URL glob's upper bound: more transfers than any run gets through, generated one by one as curl goes. */
const TRANSFERS = 100_000_000

/**
 * Parses the lines curl wrote with {@link WRITE_OUT} (`status seconds message` per finished
 * transfer): 2xx responses, their p50/p99 in ms, and everything else (a non-2xx status, or 000
 * for a transfer that failed) as errors, the first with its status and curl's message.
 */
export function parseCurlTransfers (text, seconds) {
  const times = []
  let errors = 0
  let firstError
  for (const line of text.split('\n')) {
    const [status, total, ...message] = line.split(' ')
    if (status === undefined || total === undefined) continue
    if (status.startsWith('2')) {
      times.push(Number(total) * 1000)
      continue
    }
    errors++
    firstError ??= `${status} ${message.join(' ')}`.trim()
  }
  times.sort((a, b) => a - b)
  return { requests: times.length, reqPerSec: times.length / seconds, p50: median(times), p99: quantileOfSorted(times, 0.99) ?? NaN, mbPerSec: NaN, errors, firstError, client: 'curl' }
}

// Written to stderr, which curl does not buffer: the lines of the transfers done before the run is
// stopped are all there (stdout, a pipe, would hold up to a buffer's worth back).
const WRITE_OUT = '%{stderr}%{http_code} %{time_total} %{errormsg}\n'

/**
 * Runs curl for `duration` s against `url` (a `?n` query counting up makes each transfer's
 * URL), through the proxy on 127.0.0.1:`proxyPort` when given, with at most `connections`
 * transfers at once, each connection reused. With `proxyUser` ({ name, password }), curl sends
 * them as Basic `Proxy-Authorization` from the first request on. `caPath`: the CA that https://
 * answers are verified against (the operator CA through an intercepting proxy), or `insecure`
 * for none. `http1`: HTTP/1.1 only inside a tunnel; Debian bookworm's curl 7.88.1 fails a share
 * of its parallel HTTP/2 transfers inside any proxy's tunnel ("Failed initialization"; the same
 * through Squid's CONNECT to a Node HTTP/2 server). Stopped with SIGTERM at the end; the
 * transfers still running then are neither counted nor errors.
 */
export function runCurl (curlPath, url, proxyPort, duration, connections, { proxyUser, caPath, http1 = false } = {}) {
  const verification = caPath === undefined ? [] : caPath === 'insecure' ? ['--insecure'] : ['--cacert', caPath]
  const args = [
    // --no-progress-meter: --silent alone leaves --parallel's meter on stderr.
    '--silent', '--no-progress-meter', '--parallel', '--parallel-max', String(connections),
    '--output', '/dev/null', '--write-out', WRITE_OUT,
    ...verification,
    ...(http1 ? ['--http1.1'] : []),
    ...(proxyPort === undefined ? [] : ['--proxy', `http://127.0.0.1:${proxyPort}`]),
    ...(proxyUser === undefined ? [] : ['--proxy-user', `${proxyUser.name}:${proxyUser.password}`]),
    `${url}?[1-${TRANSFERS}]`
  ]
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const child = spawn(curlPath, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let lines = ''
    child.stderr.setEncoding('utf8').on('data', (chunk) => { lines += chunk })
    let seconds = NaN
    const stop = setTimeout(() => {
      seconds = Number(process.hrtime.bigint() - started) / 1e9
      child.kill('SIGTERM')
    }, duration * 1000)
    child.once('error', (error) => { clearTimeout(stop); reject(new Error(`curl: ${error.message}`)) })
    child.once('close', (code, signal) => {
      clearTimeout(stop)
      if (signal !== 'SIGTERM') return reject(new Error(`curl ended on its own (exit ${code ?? signal}) before its ${duration} s were up: ${lines.split('\n').slice(-3).join(' | ')}`))
      resolve(parseCurlTransfers(lines, seconds))
    })
  })
}
