import { test, type Test } from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { createHash, X509Certificate } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { createServer } from 'node:https'
import { createServer as createHttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { startHttp2Proxy } from '../helpers/http2-proxy'
import { makeSelfSignedCertificate } from '../helpers/tls-fixture'

/*
 * A real browser uses the proxy as an HTTPS proxy and reaches a loopback
 * HTTPS origin through an HTTP/2 CONNECT tunnel. Debian's Chromium (`apt-get install chromium`,
 * done by .ci/run); when it is missing this test fails, it does not skip.
 *
 * Trust: `--ignore-certificate-errors-spki-list` with the SHA-256 of both self-signed
 * certificates' public keys (honoured because `--user-data-dir` is set). It covers the TLS
 * connection to the proxy as well as the tunnelled one to the origin: with only the origin's
 * key listed, Chromium fails the proxy handshake (ERR_CERT_AUTHORITY_INVALID) and the proxy
 * sees no request at all. No NSS database, certutil or writes outside the test directory.
 *
 * Nothing leaves loopback: every request Chromium makes goes through the proxy, whose policy
 * admits only 127.0.0.1:<origin port>, whose host patterns admit only the literal 127.0.0.1
 * (a name is refused before any DNS lookup) and whose resolver refuses everything.
 */
const CHROMIUM = 'chromium'
const CHROMIUM_TIMEOUT_MS = 30_000

/**
 * Destinations Chromium asks the proxy for on its own, that no command-line flag turns off:
 * at profile start the sign-in code lists the Google accounts in the (empty) cookie jar with
 * a POST to https://accounts.google.com/ListAccounts; Chromium 150 (Debian bookworm) also
 * connects to its default search engine, www.google.com, which neither --no-pings nor
 * disabling search prefetch, optimization hints or translation stops. The proxy refuses both
 * (403), and the test asserts that.
 */
const UNAVOIDABLE_BACKGROUND = new Set(['accounts.google.com:443', 'www.google.com:443'])

/** base64(sha256(SubjectPublicKeyInfo DER)), the form `--ignore-certificate-errors-spki-list` takes. */
function spkiHash (pem: Buffer): string {
  const spki = new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' })
  return createHash('sha256').update(spki).digest('base64')
}

interface ChromiumRun { code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string, ms: number }

/**
 * Runs Chromium in its own process group (it forks zygote, GPU, network, renderer and crash
 * handler processes) and kills the whole group when it overruns `CHROMIUM_TIMEOUT_MS`, when it
 * exits, and at teardown, so no browser process outlives the test.
 */
function runChromium (t: Test, args: string[], env: NodeJS.ProcessEnv): Promise<ChromiumRun> {
  const started = Date.now()
  const child = spawn(CHROMIUM, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  const killGroup = (): void => {
    if (child.pid === undefined) return
    try { process.kill(-child.pid, 'SIGKILL') } catch {}
  }
  t.teardown(killGroup)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const timer = setTimeout(() => { stderr += `\n[test] killed after ${CHROMIUM_TIMEOUT_MS} ms\n`; killGroup() }, CHROMIUM_TIMEOUT_MS)
  return new Promise((resolve, reject) => {
    child.once('error', (error) => { clearTimeout(timer); killGroup(); reject(error) })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      killGroup()
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started })
    })
  })
}

/**
 * The options the benchmarks' browser client runs Chromium with too (bench/compare/browser.mjs):
 * headless in a container, and none of the traffic Chromium makes on its own that a flag turns off.
 */
async function sharedChromiumArgs (): Promise<{ headless: string[], quiet: string[] }> {
  const browser = await import(pathToFileURL(join(__dirname, '..', '..', 'bench', 'compare', 'browser.mjs')).href) as { HEADLESS_CHROMIUM_ARGS: string[], QUIET_CHROMIUM_ARGS: string[] }
  return { headless: browser.HEADLESS_CHROMIUM_ARGS, quiet: browser.QUIET_CHROMIUM_ARGS }
}

/** True when Chromium is on PATH; otherwise fails `t` (this test never skips). */
function chromiumInstalled (t: Test): boolean {
  if (spawnSync('sh', ['-c', `command -v ${CHROMIUM}`]).status === 0) return true
  t.fail(`'${CHROMIUM}' is not on PATH: this test needs Debian's Chromium (apt-get install -y chromium), which .ci/run installs`)
  return false
}

interface SeenRequest { id: string, method: string, httpVersion: string, url: string, status?: number }

test('browser: headless Chromium with an https:// proxy loads a loopback HTTPS page through an HTTP/2 CONNECT tunnel', async (t) => {
  if (!chromiumInstalled(t)) return

  // The loopback HTTPS origin, with its own self-signed certificate for 127.0.0.1.
  const originDir = join(t.testdir(), 'origin')
  mkdirSync(originDir)
  const originTls = await makeSelfSignedCertificate(originDir)
  const marker = `h2-connect-marker-${process.pid}-${Date.now()}`
  const originRequests: string[] = []
  const origin = createServer({ key: originTls.key, cert: originTls.cert }, (req, res) => {
    originRequests.push(`${req.method ?? ''} ${req.url ?? ''}`)
    if (req.url !== '/') { res.writeHead(404).end(); return }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    // The data: icon keeps Chromium from asking for /favicon.ico.
    res.end(`<!doctype html><html><head><title>origin</title><link rel="icon" href="data:,"></head><body><p id="marker">${marker}</p></body></html>`)
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  const originPort = (origin.address() as AddressInfo).port
  const originAuthority = `127.0.0.1:${originPort}`

  // The proxy: only 127.0.0.1:<originPort> may be reached, and names are never resolved.
  const seen: SeenRequest[] = []
  const resolved: string[] = []
  const proxy = await startHttp2Proxy(t, {
    destinations: { allowedHosts: ['127.0.0.1'], allowedPorts: [originPort], allowedNetworks: ['127.0.0.1/32'] },
    resolver: async (hostname) => {
      resolved.push(hostname)
      throw Object.assign(new Error(`the test's resolver refuses ${hostname}`), { code: 'ENOTFOUND' })
    }
  }, (app) => {
    // originalUrl: the target as received (a CONNECT's url is "/", the path it is routed under).
    app.addHook('onRequest', async (request) => {
      seen.push({ id: request.id, method: request.method, httpVersion: request.raw.httpVersion, url: request.originalUrl })
    })
    app.addHook('onResponse', async (request, reply) => {
      const entry = seen.find((s) => s.id === request.id)
      if (entry !== undefined) entry.status = reply.statusCode
    })
  })

  // HOME in the test directory: nothing is read from or written to the user's own profile.
  const run = await runChromium(t, await chromiumArgs(t, proxy.port, [spkiHash(proxy.tls.cert), spkiHash(originTls.cert)], `https://${originAuthority}/`), { ...process.env, HOME: t.testdir() })
  t.comment(`chromium exited with ${String(run.code ?? run.signal)} after ${run.ms} ms`)
  const diagnostics = { stderr: run.stderr.slice(-4000), seen }

  t.equal(run.code, 0, 'chromium exited by itself', diagnostics)
  // --dump-dom exits 0 even when the page failed to load, so the marker is the real check.
  t.match(run.stdout, marker, 'the DOM Chromium dumped holds the origin\'s marker', diagnostics)
  t.same(originRequests, ['GET /'], 'the origin served the page')

  const toOrigin = seen.filter((s) => s.method === 'CONNECT' && s.url === originAuthority)
  t.ok(toOrigin.length >= 1, 'the proxy got a CONNECT for the origin', diagnostics)
  t.same(toOrigin.map((s) => s.httpVersion), toOrigin.map(() => '2.0'), 'every CONNECT for the origin came over HTTP/2', diagnostics)

  const others = seen.filter((s) => !toOrigin.includes(s))
  t.same(others.filter((s) => !(s.method === 'CONNECT' && UNAVOIDABLE_BACKGROUND.has(s.url))), [],
    'no other destination was requested (beyond the background checks no flag turns off)', diagnostics)
  t.same(others.filter((s) => s.status !== 403), [], 'the proxy refused every other request', diagnostics)
  t.same(resolved, [], 'the proxy never resolved a host name')
})

/**
 * Chromium's arguments: headless, a fresh profile in the test directory, every request through
 * the proxy at `proxyPort` (loopback included), the listed SPKI hashes trusted, no background
 * traffic, and the DOM of `url` dumped on stdout once loaded.
 */
async function chromiumArgs (t: Test, proxyPort: number, trustedSpki: string[], url: string): Promise<string[]> {
  const { headless, quiet } = await sharedChromiumArgs()
  const profile = join(t.testdir(), 'profile')
  mkdirSync(profile)
  return [
    ...headless,
    // A fresh profile; also what makes Chromium honour the SPKI list below.
    `--user-data-dir=${profile}`,
    // Everything through the proxy, loopback included (Chromium bypasses loopback by default).
    `--proxy-server=https://127.0.0.1:${proxyPort}`,
    '--proxy-bypass-list=<-loopback>',
    `--ignore-certificate-errors-spki-list=${trustedSpki.join(',')}`,
    // No background traffic.
    ...quiet,
    '--dump-dom',
    url
  ]
}

test('browser: headless Chromium with an https:// proxy loads an http:// page (HTTP/2 request with :scheme http) and, in the same session, an https:// script (HTTP/2 CONNECT)', async (t) => {
  if (!chromiumInstalled(t)) return
  const tlsDir = join(t.testdir(), 'origin')
  mkdirSync(tlsDir)
  const scriptTls = await makeSelfSignedCertificate(tlsDir)
  const marker = `scheme-http-marker-${process.pid}-${Date.now()}`
  const scriptMarker = `https-script-marker-${process.pid}-${Date.now()}`
  const served: string[] = []
  // The https:// origin serves a script that writes its marker into the page.
  const scriptOrigin = createServer({ key: scriptTls.key, cert: scriptTls.cert }, (req, res) => {
    served.push(`https ${req.method ?? ''} ${req.url ?? ''}`)
    res.writeHead(200, { 'content-type': 'text/javascript' })
    res.end(`document.getElementById('from-https').textContent = ${JSON.stringify(scriptMarker)}`)
  })
  await new Promise<void>((resolve) => scriptOrigin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { scriptOrigin.closeAllConnections(); scriptOrigin.close(() => resolve()) }))
  const scriptAuthority = `127.0.0.1:${(scriptOrigin.address() as AddressInfo).port}`
  // The http:// origin serves the page, which loads the script.
  const pageOrigin = createHttpServer((req, res) => {
    served.push(`http ${req.method ?? ''} ${req.url ?? ''} via=${String(req.headers.via)}`)
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(`<!doctype html><html><head><title>plain</title><link rel="icon" href="data:,"></head><body><p id="marker">${marker}</p><p id="from-https"></p><script src="https://${scriptAuthority}/script.js"></script></body></html>`)
  })
  await new Promise<void>((resolve) => pageOrigin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { pageOrigin.closeAllConnections(); pageOrigin.close(() => resolve()) }))
  const pageAuthority = `127.0.0.1:${(pageOrigin.address() as AddressInfo).port}`

  const seen: SeenRequest[] = []
  const proxy = await startHttp2Proxy(t, {
    destinations: { allowedHosts: ['127.0.0.1'], allowedPorts: [Number(pageAuthority.split(':')[1]), Number(scriptAuthority.split(':')[1])], allowedNetworks: ['127.0.0.1/32'] },
    resolver: async (hostname) => { throw Object.assign(new Error(`the test's resolver refuses ${hostname}`), { code: 'ENOTFOUND' }) }
  }, (app) => {
    app.addHook('onRequest', async (request) => {
      seen.push({ id: request.id, method: request.method, httpVersion: request.raw.httpVersion, url: `${String(request.headers[':scheme'] ?? '')} ${request.originalUrl}` })
    })
  })
  const run = await runChromium(t, await chromiumArgs(t, proxy.port, [spkiHash(proxy.tls.cert), spkiHash(scriptTls.cert)], `http://${pageAuthority}/`), { ...process.env, HOME: t.testdir() })
  const diagnostics = { stderr: run.stderr.slice(-4000), seen, served }
  t.equal(run.code, 0, 'chromium exited by itself', diagnostics)
  t.match(run.stdout, marker, 'the http:// page loaded', diagnostics)
  t.match(run.stdout, scriptMarker, 'its https:// script ran', diagnostics)
  t.same(served, ['http GET / via=2 fastify-forward-proxy', 'https GET /script.js'], 'both origins served, the page through the proxy', diagnostics)
  t.ok(seen.some((s) => s.httpVersion === '2.0' && s.method === 'GET' && s.url === 'http /'), 'the page came as an HTTP/2 request with :scheme http', diagnostics)
  t.ok(seen.some((s) => s.httpVersion === '2.0' && s.method === 'CONNECT' && s.url.endsWith(scriptAuthority)), 'the script through an HTTP/2 CONNECT', diagnostics)
})
