// Benchmark harness. Everything stays on 127.0.0.1, each party in its own process.
// BENCH_DURATION (s per measurement, default 8), BENCH_CONNECTIONS (default 32), and
// BENCH_SCENARIOS, a comma-separated list of groups (default: all three):
// - base: each scenario direct and through the plain-text proxy, with the ratio;
// - h2: HTTP/1.1 CONNECT against HTTP/2 CONNECT on one TLS proxy (http2 + allowHTTP1):
//   tunnels/s, and MB/s of 64 MiB downloads and uploads through 1 and 8 tunnels;
// - intercept: an HTTPS origin direct, through an opaque tunnel, and through an intercepted
//   tunnel (leaves from an operator CA, destination validated): keep-alive requests, a new
//   connection per request, a 64 MiB download;
// - h2-windows: the HTTP/2 transfers again with raised flow-control windows (the client's for
//   downloads, a second TLS proxy's for uploads; default 1 MiB per stream, 16 MiB per
//   connection), against the same HTTP/1.1 figures.
// BENCH_H2_SESSIONS (default 1): HTTP/2 sessions the tunnel streams are spread over.
// BENCH_RAW=1 prints every tunnel measurement as JSON on stderr.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { makeCa, makeLeaf, makeSelfSigned as makeCertificate } from './pki.mjs'

const here = (file) => fileURLToPath(new URL(file, import.meta.url))
const duration = process.env.BENCH_DURATION ?? '8'
const connections = process.env.BENCH_CONNECTIONS ?? '32'
const h2Sessions = Number(process.env.BENCH_H2_SESSIONS ?? '1')
const GROUPS = ['base', 'intercept', 'h2', 'h2-windows']
const groups = (process.env.BENCH_SCENARIOS ?? GROUPS.join(',')).split(',').map((g) => g.trim()).filter(Boolean)
for (const group of groups) {
  if (!GROUPS.includes(group)) throw new Error(`BENCH_SCENARIOS: unknown group ${group} (${GROUPS.join(', ')})`)
}
// Raised HTTP/2 receive windows (Node's default is 65535 bytes for each stream and for the connection).
// BENCH_H2_STREAM_WINDOW and BENCH_H2_CONNECTION_WINDOW (bytes) change the raised values.
const RAISED_STREAM_WINDOW = Number(process.env.BENCH_H2_STREAM_WINDOW ?? 1024 * 1024)
const RAISED_CONNECTION_WINDOW = Number(process.env.BENCH_H2_CONNECTION_WINDOW ?? 16 * 1024 * 1024)

const children = []
process.once('exit', () => { for (const child of children) if (child.exitCode === null) child.kill() })
function startChild (file, args = []) {
  const child = spawn(process.execPath, [here(file), ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${file} exited (${code}) before it listened`)))
    child.stdout.once('data', (chunk) => resolve({ child, line: chunk.toString().trim() }))
  })
}

function load (mode, originPort, proxyPort, caPath) {
  const args = [here('./load.mjs'), mode, String(originPort), String(proxyPort), duration, connections, ...(caPath === undefined ? [] : [caPath])]
  const output = execFileSync(process.execPath, args, { encoding: 'utf8' })
  return JSON.parse(output)
}

function tunnelLoad (options) {
  const output = execFileSync(process.execPath, [here('./tunnel-load.mjs'), JSON.stringify({ duration, ...options })], { encoding: 'utf8' })
  return JSON.parse(output)
}

function rssMiB (pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))
  return line === undefined ? NaN : Number(line.split(/\s+/)[1]) / 1024
}

async function runIntercept () {
  const directory = mkdtempSync(join(tmpdir(), 'ffp-bench-intercept-'))
  try {
    const destinationCa = makeCa(directory, 'destination-ca')
    const operatorCa = makeCa(directory, 'operator-ca')
    const originLeaf = makeLeaf(directory, 'origin', destinationCa)
    const origin = await startChild('./origin.mjs', ['tls', originLeaf.keyPath, originLeaf.certPath])
    const opaque = await startChild('./proxy-server.mjs')
    const intercepting = await startChild('./intercepting-proxy-server.mjs', [operatorCa.certPath, operatorCa.keyPath, destinationCa.certPath])
    const originPort = Number(origin.line)
    const opaquePort = Number(opaque.line)
    const interceptPort = Number(intercepting.line)
    const rows = [
      ['keep-alive requests, 13 B', 'https-direct', 'https-tunnel', 'reqPerSec'],
      ['new TLS connection per request, 13 B', 'https-direct-new', 'https-tunnel-new', 'reqPerSec'],
      ['64 MiB download', 'download-https-direct', 'download-https-tunnel', 'mbPerSec']
    ].map(([name, directMode, tunnelMode, metric]) => ({
      name,
      metric,
      direct: load(directMode, originPort, opaquePort, destinationCa.certPath),
      opaque: load(tunnelMode, originPort, opaquePort, destinationCa.certPath),
      intercepted: load(tunnelMode, originPort, interceptPort, operatorCa.certPath)
    }))
    const rss = rssMiB(intercepting.child.pid)
    for (const child of [origin, opaque, intercepting]) child.child.kill()

    print('Interception: HTTPS origin (Node https, P-256 leaf from a test CA); the client trusts the destination CA (direct, opaque) or the operator CA (intercepted); the intercepting proxy mints P-256 leaves and validates the origin.\n')
    print('| scenario | direct | opaque tunnel | intercepted | intercepted / direct | p99 ms direct / opaque / intercepted | errors |')
    print('|---|---|---|---|---|---|---|')
    for (const { name, metric, direct, opaque: tunnel, intercepted } of rows) {
      const unit = metric === 'reqPerSec' ? 'req/s' : 'MB/s'
      print(`| ${name} | ${fmt(direct[metric])} ${unit} | ${fmt(tunnel[metric])} ${unit} | ${fmt(intercepted[metric])} ${unit} | ${fmt(intercepted[metric] / direct[metric], 2)} | ${fmt(direct.p99, 1)} / ${fmt(tunnel.p99, 1)} / ${fmt(intercepted.p99, 1)} | ${direct.errors + tunnel.errors + intercepted.errors} |`)
    }
    print(`\nintercepting proxy RSS after the run: ${fmt(rss, 1)} MiB\n`)
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
}

const fmt = (n, digits = 0) => n.toFixed(digits)
const print = (line = '') => console.log(line)

async function runBase () {
  const origin = await startChild('./origin.mjs')
  const proxy = await startChild('./proxy-server.mjs')
  const originPort = Number(origin.line)
  const proxyPort = Number(proxy.line)
  const scenarios = [
    ['http:// forwarding, keep-alive, 13 B responses', 'http-direct', 'http-proxy', 'reqPerSec'],
    ['opaque CONNECT tunnel, keep-alive inside, 13 B responses', 'tunnel-direct', 'tunnel-proxy', 'reqPerSec'],
    ['64 MiB download, opaque tunnel', 'download-direct', 'download-tunnel', 'mbPerSec']
  ]
  const rows = []
  for (const [name, directMode, proxyMode, metric] of scenarios) {
    const direct = load(directMode, originPort, proxyPort)
    const proxied = load(proxyMode, originPort, proxyPort)
    rows.push({ name, direct, proxied, metric, ratio: proxied[metric] / direct[metric] })
  }
  const rss = rssMiB(proxy.child.pid)
  origin.child.kill()
  proxy.child.kill()

  print('| scenario | direct | through proxy | proxy / direct | p99 direct ms | p99 proxy ms | errors |')
  print('|---|---|---|---|---|---|---|')
  for (const { name, direct, proxied, metric, ratio } of rows) {
    const unit = metric === 'reqPerSec' ? 'req/s' : 'MB/s'
    print(`| ${name} | ${fmt(direct[metric])} ${unit} | ${fmt(proxied[metric])} ${unit} | ${fmt(ratio, 2)} | ${fmt(direct.p99, 1)} | ${fmt(proxied.p99, 1)} | ${direct.errors + proxied.errors} |`)
  }
  print(`\nproxy RSS after the run: ${fmt(rss, 1)} MiB\n`)
}

async function runHttp2 () {
  const certDir = mkdtempSync(join(tmpdir(), 'ffp-bench-'))
  try {
    const { keyPath, certPath } = makeCertificate(certDir)
    const destinations = JSON.parse((await startChild('./tcp-origin.mjs')).line)
    const plain = await startChild('./proxy-server.mjs')
    const tls = await startChild('./proxy-server.mjs', ['tls', keyPath, certPath])
    const raised = groups.includes('h2-windows')
      ? await startChild('./proxy-server.mjs', ['tls', keyPath, certPath, String(RAISED_STREAM_WINDOW), String(RAISED_CONNECTION_WINDOW)])
      : undefined
    const tlsPort = Number(tls.line)
    const common = { ca: certPath, sessions: h2Sessions }
    const open = (protocol, extra = {}) => ({ scenario: 'open', protocol, proxyPort: tlsPort, destPort: destinations.echo, concurrency: Number(connections), ...common, ...extra })
    const download = (protocol, concurrency, extra = {}) => ({ scenario: 'download', protocol, proxyPort: tlsPort, destPort: destinations.blast, concurrency, ...common, ...extra })
    const upload = (protocol, concurrency, extra = {}) => ({ scenario: 'upload', protocol, proxyPort: tlsPort, destPort: destinations.sink, concurrency, ...common, ...extra })
    const clientWindows = { streamWindow: RAISED_STREAM_WINDOW, connectionWindow: RAISED_CONNECTION_WINDOW }
    const raisedProxy = raised === undefined ? {} : { proxyPort: Number(raised.line) }

    // Each row: HTTP/1.1 spec, HTTP/2 spec, metric. Equal specs are measured once per run, in
    // row order, so each raised-window row is measured right after its default-window row.
    const rows = []
    if (groups.includes('h2')) {
      rows.push(
        [`open, echo 16 B, close; ${connections} at a time`, open('h1'), open('h2'), 'tunnelsPerSec'],
        ['same, HTTP/1.1 resuming its TLS session', open('h1', { resume: true }), open('h2'), 'tunnelsPerSec'],
        ['same, HTTP/1.1 in clear text (plain proxy, reference)', open('h1-plain', { proxyPort: Number(plain.line) }), open('h2'), 'tunnelsPerSec']
      )
    }
    const mib = (n) => (n >= 1048576 ? `${n / 1048576} MiB` : `${n / 1024} KiB`)
    const windows = `${mib(RAISED_STREAM_WINDOW)} stream / ${mib(RAISED_CONNECTION_WINDOW)} connection`
    for (const [name, spec, raisedOptions, raisedName] of [
      ['64 MiB downloads, 1 tunnel', (p, o) => download(p, 1, o), clientWindows, `client windows ${windows}`],
      ['64 MiB downloads, 8 tunnels', (p, o) => download(p, 8, o), clientWindows, `client windows ${windows}`],
      ['64 MiB uploads, 1 tunnel', (p, o) => upload(p, 1, o), raisedProxy, `proxy windows ${windows}`],
      ['64 MiB uploads, 8 tunnels', (p, o) => upload(p, 8, o), raisedProxy, `proxy windows ${windows}`]
    ]) {
      if (groups.includes('h2')) rows.push([name, spec('h1'), spec('h2'), 'mbPerSec'])
      if (raised !== undefined) rows.push([`${name}, HTTP/2 ${raisedName}`, spec('h1'), spec('h2', raisedOptions), 'mbPerSec'])
    }
    const measured = new Map()
    const measure = (spec) => {
      const key = JSON.stringify(spec)
      if (!measured.has(key)) {
        measured.set(key, tunnelLoad(spec))
        if (process.env.BENCH_RAW) console.error(JSON.stringify({ spec, result: measured.get(key) }))
      }
      return measured.get(key)
    }
    const results = rows.map(([name, h1Spec, h2Spec, metric]) => ({ name, h1: measure(h1Spec), h2: measure(h2Spec), metric }))
    const rss = { tls: rssMiB(tls.child.pid), raised: raised && rssMiB(raised.child.pid) }
    for (const child of children) child.kill()

    print(`HTTP/2 tunnels: TLS proxy (http2: true, https.allowHTTP1), self-signed P-256 certificate; HTTP/1.1 = tls.connect with ALPN http/1.1 then CONNECT, one TLS connection per tunnel; HTTP/2 = one CONNECT stream per tunnel on ${h2Sessions} session(s). Raw TCP destinations (bench/tcp-origin.mjs).\n`)
    print('| scenario | HTTP/1.1 tunnels | HTTP/2 tunnels | HTTP/2 / HTTP/1.1 | p99 ms HTTP/1.1 | p99 ms HTTP/2 | errors |')
    print('|---|---|---|---|---|---|---|')
    for (const { name, h1, h2, metric } of results) {
      const unit = metric === 'tunnelsPerSec' ? 'tunnels/s' : 'MB/s'
      const p99 = (r) => (metric === 'tunnelsPerSec' ? fmt(r.p99, 1) : '-')
      print(`| ${name} | ${fmt(h1[metric])} ${unit} | ${fmt(h2[metric])} ${unit} | ${fmt(h2[metric] / h1[metric], 2)} | ${p99(h1)} | ${p99(h2)} | ${h1.errors + h2.errors} |`)
    }
    print(`\nTLS proxy RSS after the run: ${fmt(rss.tls, 1)} MiB${rss.raised === undefined ? '' : `; with raised windows: ${fmt(rss.raised, 1)} MiB`}`)
  } finally {
    rmSync(certDir, { recursive: true, force: true })
  }
}

try {
  print(`node ${process.version}, ${cpus().length} cores, duration ${duration}s per measurement, ${connections} connections (downloads: 1), groups: ${groups.join(',')}`)
  print('base: origin Node http (bench/origin.mjs), client undici Pool (bench/load.mjs); h2: client bench/tunnel-load.mjs; each party in its own process\n')
  if (groups.includes('base')) await runBase()
  if (groups.includes('intercept')) await runIntercept()
  if (groups.includes('h2') || groups.includes('h2-windows')) await runHttp2()
} finally {
  for (const child of children) if (child.exitCode === null) child.kill()
}
