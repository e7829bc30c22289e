// The load scenarios of the comparison, each measured direct and through every proxy with the
// same client: bench/load.mjs (undici, 32 keep-alive connections; downloads over 1; the
// per-request suite's client under BENCH_HTTP_CLIENT=node), or hey for
// http:// forwarding when `settings.heyPath` is set and for the `-hey` tunnel scenarios.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { runHey } from './hey.mjs'
import { PLAIN_HOST, TLS_HOST } from './origin.mjs'

const LOAD = fileURLToPath(new URL('../load.mjs', import.meta.url))

/** Scenario id → label (as in the table), metric, load.mjs modes, and which origin it uses. */
export const SCENARIOS = {
  http: { label: 'http:// forwarding, keep-alive, small responses', metric: 'reqPerSec', direct: 'http-direct', proxied: 'http-proxy', tls: false, target: 0.5 },
  tunnel: { label: 'opaque CONNECT, keep-alive inside, small responses', metric: 'reqPerSec', direct: 'tunnel-direct', proxied: 'tunnel-proxy', tls: false, target: 0.8 },
  intercept: { label: 'intercepted, keep-alive, small responses', metric: 'reqPerSec', direct: 'https-direct', proxied: 'https-tunnel', tls: true, target: 0.45 },
  'intercept-new': { label: 'intercepted, new TLS connection per request', metric: 'reqPerSec', direct: 'https-direct-new', proxied: 'https-tunnel-new', tls: true, target: 0.6 },
  download: { label: '64 MiB download, opaque tunnel', metric: 'mbPerSec', direct: 'download-direct', proxied: 'download-tunnel', tls: false, target: 0.95 },
  'download-intercept': { label: '64 MiB download, intercepted', metric: 'mbPerSec', direct: 'download-https-direct', proxied: 'download-https-tunnel', tls: true, target: 0.5 },
  // The tunnel scenarios again with Go's net/http Transport (hey), which dials a spare connection
  // whenever a request finds none idle and abandons it when an older one frees up first. hey does
  // not verify certificates, so inside the tunnel it speaks TLS to nginx like a real client would.
  'tunnel-hey': { label: 'opaque CONNECT, keep-alive inside (hey, TLS inside)', metric: 'reqPerSec', hey: { host: PLAIN_HOST, keepAlive: true }, tls: true, target: 0.65 },
  'intercept-hey': { label: 'intercepted, keep-alive (hey)', metric: 'reqPerSec', hey: { host: TLS_HOST, keepAlive: true }, tls: true, target: 0.32 },
  'intercept-new-hey': { label: 'intercepted, new TLS connection per request (hey)', metric: 'reqPerSec', hey: { host: TLS_HOST, keepAlive: false }, tls: true, target: 0.4 }
}

/**
 * Runs bench/load.mjs once for `scenario` against `origin`, direct when `proxyPort` is undefined.
 * The client trusts the destination CA direct and the operator CA through a proxy (interception).
 */
export function runLoad (scenario, origin, pki, settings, proxyPort) {
  const spec = SCENARIOS[scenario]
  if (scenario === 'http' && settings.heyPath !== undefined) {
    return runHey(settings.heyPath, `http://${PLAIN_HOST}:${origin.httpPort}/small`, proxyPort, settings.duration, settings.connections)
  }
  if (spec.hey !== undefined) {
    if (settings.heyPath === undefined) return Promise.reject(new Error('hey is not installed'))
    const port = spec.hey.host === TLS_HOST ? origin.httpsPort : origin.httpsOpaquePort
    if (port === undefined) return Promise.reject(new Error('the origin has no TLS port on this host (nginx is not installed)'))
    return runHey(settings.heyPath, `https://${spec.hey.host}:${port}/small`, proxyPort, settings.duration, settings.connections, spec.hey.keepAlive)
  }
  return runUndiciLoad(scenario, origin, pki, { duration: settings.duration, connections: settings.connections, warmupMs: settings.warmupMs }, proxyPort)
}

/**
 * Runs bench/load.mjs (undici) once for `scenario` (one with load.mjs modes) against `origin`,
 * direct when `proxyPort` is undefined: `duration` s over `connections` keep-alive connections
 * after `warmupMs` (0: none), with `authorization` as the `Proxy-Authorization` of every request
 * or CONNECT through the proxy when given. The client trusts the destination CA direct and the
 * operator CA through a proxy (interception).
 */
export function runUndiciLoad (scenario, origin, pki, { duration, connections, warmupMs, authorization }, proxyPort) {
  const spec = SCENARIOS[scenario]
  const mode = proxyPort === undefined ? spec.direct : spec.proxied
  const port = spec.tls ? origin.httpsPort : origin.httpPort
  const ca = !spec.tls ? [] : [proxyPort === undefined ? pki.destinationCa.certPath : pki.operatorCa.certPath]
  const args = [LOAD, mode, String(port), String(proxyPort ?? 0), String(duration), String(connections), ...ca]
  const env = { ...process.env, BENCH_ORIGIN_HOST: spec.tls ? TLS_HOST : PLAIN_HOST, BENCH_WARMUP_MS: String(warmupMs) }
  if (authorization !== undefined && proxyPort !== undefined) env.BENCH_PROXY_AUTHORIZATION = authorization
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { env, encoding: 'utf8', timeout: (duration + 120) * 1000 }, (error, stdout, stderr) => {
      if (error !== null) return reject(new Error(`bench/load.mjs ${mode}: ${error.message}\n${stderr}`))
      resolve({ ...JSON.parse(stdout), client: 'undici' })
    })
  })
}
