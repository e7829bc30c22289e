// Load generator, run in its own process: keeps `connections` requests in flight for
// `duration` seconds over keep-alive connections and reports req/s, p99 and MB/s as JSON.
// Modes: http-direct, http-proxy (absolute-form through the proxy), tunnel-direct,
// tunnel-proxy (each connection is a CONNECT tunnel), download-direct, download-tunnel.
// With a sixth argument (a CA file the client trusts) the origin is HTTPS and the modes are
// https-direct, https-tunnel (TLS to the origin through a CONNECT tunnel: opaque, or
// intercepted when the proxy intercepts), https-direct-new / https-tunnel-new (a new connection,
// so a new TLS handshake, per request), download-https-direct, download-https-tunnel.
// BENCH_ORIGIN_HOST (default 127.0.0.1) is the origin's address (CONNECT target, TLS name).
// BENCH_WARMUP_MS (default 1000): warm-up before measuring (not for downloads).
// BENCH_PROXY_AUTHORIZATION: a `Proxy-Authorization` value sent with every request through the
// proxy (http-proxy) or with every CONNECT (the tunnel modes).
// Output: requests (2xx), reqPerSec, p50 and p99 (ms), mbPerSec, errors (other answers too).
import { readFileSync } from 'node:fs'
import { connect as tlsConnect } from 'node:tls'
import { Pool } from 'undici'
import { checkServerIdentity, openTunnel } from './compare/connect-tunnel.mjs'

const [mode, originPort, proxyPort, durationText, connectionsText, caPath] = process.argv.slice(2)
const ca = caPath === undefined ? undefined : readFileSync(caPath)
const duration = Number(durationText) * 1000
const download = mode.startsWith('download')
const connections = download ? 1 : Number(connectionsText)
const originHost = process.env.BENCH_ORIGIN_HOST ?? '127.0.0.1'
const authorization = process.env.BENCH_PROXY_AUTHORIZATION
const origin = `${ca === undefined ? 'http' : 'https'}://${originHost}:${originPort}`

function tunnelConnector (options, callback) {
  openTunnel(Number(proxyPort), originHost, originPort, authorization).then((socket) => callback(null, socket), (error) => callback(error, null))
}

function tlsTunnelConnector (options, callback) {
  tunnelConnector(options, (error, socket) => {
    if (error !== null) return callback(error, null)
    // checkServerIdentity: also accepts Squid's client-first leaves (the IP target as a DNS name).
    const tls = tlsConnect({ socket, host: originHost, ca, ALPNProtocols: ['http/1.1'], checkServerIdentity }, () => callback(null, tls))
    tls.once('error', (tlsError) => callback(tlsError, null))
  })
}

const viaProxy = mode === 'http-proxy'
const tunnelled = ['tunnel-proxy', 'download-tunnel', 'https-tunnel', 'https-tunnel-new', 'download-https-tunnel'].includes(mode)
const pool = new Pool(viaProxy ? `http://127.0.0.1:${proxyPort}` : origin, {
  connections,
  pipelining: 1,
  ...(mode.endsWith('-new') ? { maxRequestsPerClient: 1 } : {}),
  ...(tunnelled ? { connect: ca === undefined ? tunnelConnector : tlsTunnelConnector } : {}),
  ...(!tunnelled && ca !== undefined ? { connect: { ca } } : {})
})
const path = download ? '/big' : '/small'
const requestPath = viaProxy ? `${origin}${path}` : path
const headers = viaProxy && authorization !== undefined ? { 'proxy-authorization': authorization } : undefined

const latencies = []
let bytes = 0
let completed = 0
let errors = 0
let measuring = false
const warmup = download ? 0 : Number(process.env.BENCH_WARMUP_MS ?? 1000)
const stopAt = Date.now() + warmup + duration
setTimeout(() => { measuring = true; bytes = 0; completed = 0; latencies.length = 0 }, warmup)
const startedMeasuring = Date.now() + warmup

async function worker () {
  while (Date.now() < stopAt) {
    const started = process.hrtime.bigint()
    try {
      const { statusCode, body } = await pool.request({ path: requestPath, method: 'GET', headers })
      for await (const chunk of body) bytes += chunk.length
      if (statusCode < 200 || statusCode > 299) errors++
      else if (measuring || download) { completed++; latencies.push(Number(process.hrtime.bigint() - started) / 1e6) }
    } catch {
      errors++
    }
  }
}
await Promise.all(Array.from({ length: connections }, worker))
const seconds = (Date.now() - startedMeasuring) / 1000
latencies.sort((a, b) => a - b)
const quantile = (q) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? 0
process.stdout.write(JSON.stringify({ mode, requests: completed, reqPerSec: completed / seconds, p50: quantile(0.5), p99: quantile(0.99), mbPerSec: bytes / 1048576 / seconds, errors }) + '\n')
await pool.close()
