// What users install, black box: the package as `npm pack` makes it, installed into an empty
// folder with fresh resolution (no lockfile, the newest versions its ranges allow), then driven
// over loopback sockets as the `forward-proxy` bin (`npx forward-proxy --config ...`) and as a
// plugin in a small CommonJS Fastify app. Our own package-lock.json pins the dependencies the rest
// of the suite runs with; a dependency release that breaks the proxy shows up here first.
// Not part of `npm test`: run it with `npm run test:fresh-install` (it needs the npm registry).

import { execFile, spawn } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import type { ClientHttp2Stream, IncomingHttpHeaders } from 'node:http2'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import type { Duplex } from 'node:stream'
import type { TLSSocket } from 'node:tls'
import { promisify } from 'node:util'
import { randomBytes } from 'node:crypto'
import { t as file, test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { childEnv } from '../helpers/child-node'
import { listeningUrls, outputOf, type BinProcess } from '../helpers/cli-bin'
import { connectHttp2Listener } from '../helpers/cli-http2'
import { openInterceptedTls } from '../helpers/intercepted-client'
import { startTlsOrigin, type SeenRequest, type TlsOrigin } from '../helpers/intercepting-proxy'
import { makeInterceptionPki, type InterceptionPki } from '../helpers/interception-pki'
import { basic, openTunnel, rawExchange } from '../helpers/raw-client'
import { startOrigin, startSentinel, type EchoedRequest, type Origin, type Sentinel } from '../helpers/servers'
import { acceptKey, readFrames, startWebSocketOrigin, textFrame, type WebSocketOrigin } from '../helpers/websocket-origin'
import { within } from '../helpers/within'
import { expectNothingDialedBefore } from '../helpers/nothing-dialed'
import { packInto } from '../helpers/package-tarball'

const run = promisify(execFile)

// npm pack builds the package (prepack: tsc) and npm install downloads from the registry.
file.setTimeout(300_000)

const USER = 'alice'
const PASSWORD = 's3cret'
const PROXY_AUTHORIZATION = basic(USER, PASSWORD)
/**
 * Tunnels to this host are intercepted; tunnels to `127.0.0.1` (the same origins) stay opaque.
 * The proxy resolves it; an `::1` answer is dropped by the policy (only 127.0.0.1/32 is allowed).
 */
const INTERCEPTED_HOST = 'localhost'
const DENIED_HOST = 'denied.example'
const INJECTED_HEADER = 'x-injected'

/** The package packed and installed in a scratch folder. */
interface Scratch {
  directory: string
  env: NodeJS.ProcessEnv
}

/** The loopback origins every check goes to. */
interface Origins {
  http: Origin
  tls: TlsOrigin
  ws: WebSocketOrigin
  /** A port outside `allowedPorts`: a 403 must leave it without connections. */
  notAllowed: Sentinel
}

/** A running proxy: its plain HTTP/1.1 listener and its TLS listener that speaks HTTP/2. */
interface ProxyEndpoints {
  plainUrl: string
  plainPort: number
  http2Url: string
}

/** What the checks need besides the proxy. */
interface Context {
  pki: InterceptionPki
  origins: Origins
  /** The value the proxy's header rule sets on requests to {@link INTERCEPTED_HOST}. */
  injected: string
}

test('fresh install: the packed package with the newest dependencies its ranges allow works as the bin and as a plugin', async (t) => {
  const scratch = await installFresh(t)
  const pki = await makeInterceptionPki(t)
  writePkiFiles(scratch.directory, pki)
  const origins = await startOrigins(t, pki)

  await t.test('bin: npx forward-proxy --config with a plain and an HTTP/2 TLS listener, users, destinations, interception and a header rule', async (t) => {
    const context: Context = { pki, origins, injected: 'by-the-bin' }
    const proxy = await startBin(t, scratch, context)
    await checkHealth(t, proxy)
    await checkProxy(t, proxy, context)
  })

  await t.test('plugin: a CommonJS Fastify app requiring fastify and fastify-forward-proxy from the scratch node_modules', async (t) => {
    const context: Context = { pki, origins, injected: 'by-the-plugin' }
    const proxy = await startPluginApp(t, scratch, context)
    await checkHealth(t, proxy)
    await checkProxy(t, proxy, context)
    await checkConnectAsSeenByHooks(t, proxy, context)
  })
})

/**
 * Packs the repository into a scratch folder under the system's temporary directory (removed at
 * teardown) and installs the tarball and `fastify@5` there with no lockfile anywhere, as a user's
 * `npm install` would; prints the versions that were resolved.
 */
async function installFresh (t: Test): Promise<Scratch> {
  const directory = mkdtempSync(join(tmpdir(), 'ffp-fresh-install-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  const env = scratchEnv()
  const { tarball, files } = await packInto(directory, { env })
  t.notOk(files.includes('npm-shrinkwrap.json'), 'the package ships no shrinkwrap that would pin its dependencies')
  writeFileSync(join(directory, 'package.json'), JSON.stringify({ name: 'ffp-fresh-install-smoke', version: '0.0.0', private: true }, null, 2))
  t.strictSame(lockfilesIn(directory), [], 'no lockfile in the scratch folder before the install')
  const install = await run('npm', ['install', '--no-audit', '--no-fund', tarball, 'fastify@5'], { cwd: directory, env, maxBuffer: 16 * 1024 * 1024 })
  await reportVersions(t, directory, env)
  // Warnings such as EBADENGINE (a dependency that declares a newer Node) are worth seeing in CI.
  const warnings = install.stderr.split('\n').filter((line) => /^npm warn/i.test(line))
  if (warnings.length > 0) t.comment(`npm install warned:\n${warnings.join('\n')}`)
  return { directory, env }
}

/**
 * The environment of the npm, npx and node processes run in the scratch folder: what a user's
 * shell would have. Tap's NODE_OPTIONS and the variables `npm run` sets for the repository's own
 * scripts (its package, its lifecycle, its prefix) are dropped; the Node running this test comes
 * first on PATH, so npm, npx and the bin's `#!/usr/bin/env node` all run on it.
 */
function scratchEnv (): NodeJS.ProcessEnv {
  const env = childEnv()
  for (const name of Object.keys(env)) {
    if (name.startsWith('npm_') && !name.startsWith('npm_config_')) delete env[name]
  }
  delete env.npm_config_local_prefix
  delete env.npm_config_prefix
  env.PATH = `${dirname(process.execPath)}${delimiter}${env.PATH ?? ''}`
  return env
}

function lockfilesIn (directory: string): string[] {
  return ['package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml'].filter((name) => existsSync(join(directory, name)))
}

/** A node of `npm ls --json --all`. */
interface LsNode {
  version?: string
  dependencies?: Record<string, LsNode>
}

/** Prints the Node version and every resolved version of the packages the proxy leans on most. */
async function reportVersions (t: Test, directory: string, env: NodeJS.ProcessEnv): Promise<void> {
  const { stdout } = await run('npm', ['ls', '--json', '--all'], { cwd: directory, env, maxBuffer: 16 * 1024 * 1024 })
  const tree = JSON.parse(stdout) as LsNode
  const npmVersion = (await run('npm', ['--version'], { env })).stdout.trim()
  const found: string[] = []
  for (const name of ['fastify-forward-proxy', 'fastify', 'find-my-way', 'undici']) {
    const versions = [...versionsOf(tree, name)].sort()
    t.not(versions.length, 0, `${name} is installed`)
    found.push(`${name} ${versions.join(', ')}`)
  }
  t.comment(`fresh install on Node ${process.version} (npm ${npmVersion}): ${found.join('; ')}`)
}

function versionsOf (node: LsNode, name: string, into = new Set<string>()): Set<string> {
  for (const [dependency, child] of Object.entries(node.dependencies ?? {})) {
    if (dependency === name && child.version !== undefined) into.add(child.version)
    versionsOf(child, name, into)
  }
  return into
}

/** The certificate and key files the bin's configuration and the plugin app read; keys mode 0600. */
function writePkiFiles (directory: string, pki: InterceptionPki): void {
  const secret = { mode: 0o600 }
  writeFileSync(join(directory, 'operator-ca.pem'), pki.operatorCa.cert)
  writeFileSync(join(directory, 'operator-ca.key'), pki.operatorCa.key, secret)
  writeFileSync(join(directory, 'destination-ca.pem'), pki.destinationCa.cert)
  // The listener's certificate (127.0.0.1) comes from the operator CA too: clients trust one CA.
  writeFileSync(join(directory, 'listener.pem'), pki.interceptionLeaf.cert)
  writeFileSync(join(directory, 'listener.key'), pki.interceptionLeaf.key, secret)
}

async function startOrigins (t: Test, pki: InterceptionPki): Promise<Origins> {
  return {
    http: await startOrigin(t),
    tls: await startTlsOrigin(t, pki),
    ws: await startWebSocketOrigin(t, pki, 0),
    notAllowed: await startSentinel(t)
  }
}

/** The destination policy both proxies get: loopback origins' ports only, and one denied host. */
function destinations (origins: Origins): Record<string, unknown> {
  return {
    allowedHosts: ['*'],
    deniedHosts: [DENIED_HOST],
    allowedPorts: [443, origins.http.port, origins.tls.port, origins.ws.port],
    allowedNetworks: ['127.0.0.1/32']
  }
}

/** Runs `npx forward-proxy --config proxy.json` in the scratch folder and waits for its listeners. */
async function startBin (t: Test, scratch: Scratch, context: Context): Promise<ProxyEndpoints> {
  const config = {
    listen: [
      { host: '127.0.0.1', port: 0 },
      { host: '127.0.0.1', port: 0, tls: { cert: 'listener.pem', key: 'listener.key' }, http2: true }
    ],
    users: { [USER]: PASSWORD },
    destinations: destinations(context.origins),
    interception: {
      hosts: [INTERCEPTED_HOST],
      ca: { cert: 'operator-ca.pem', key: 'operator-ca.key' },
      trustedDestinationCa: 'destination-ca.pem'
    },
    headers: [{ hosts: [INTERCEPTED_HOST], set: { [INJECTED_HEADER]: context.injected } }],
    log: { level: 'warn' }
  }
  writeFileSync(join(scratch.directory, 'proxy.json'), JSON.stringify(config, null, 2))
  // Were the bin missing from node_modules/.bin, npx would fetch whatever the registry calls
  // `forward-proxy` (without a TTY it does not ask): `yes=false` makes it fail instead.
  const bin = spawnInScratch(t, { ...scratch, env: { ...scratch.env, npm_config_yes: 'false' } }, 'npx', ['forward-proxy', '--config', 'proxy.json'])
  const urls = await within(listeningUrls(bin), 'the bin\'s start-up summary', 60_000)
  t.equal(urls.length, 2, `two listeners: ${urls.join(', ')}`)
  const [plainUrl = '', http2Url = ''] = urls
  return { plainUrl, plainPort: Number(new URL(plainUrl).port), http2Url }
}

/** Copies scratch-app.js into the scratch folder and runs it with node from there. */
async function startPluginApp (t: Test, scratch: Scratch, context: Context): Promise<ProxyEndpoints> {
  const settings = {
    users: { [USER]: PASSWORD },
    destinations: destinations(context.origins),
    interceptedHosts: [INTERCEPTED_HOST],
    ca: { cert: 'operator-ca.pem', key: 'operator-ca.key' },
    trustedDestinationCa: 'destination-ca.pem',
    headers: [{ hosts: [INTERCEPTED_HOST], set: { [INJECTED_HEADER]: context.injected } }],
    tls: { cert: 'listener.pem', key: 'listener.key' }
  }
  writeFileSync(join(scratch.directory, 'settings.json'), JSON.stringify(settings, null, 2))
  copyFileSync(join(__dirname, 'scratch-app.js'), join(scratch.directory, 'app.js'))
  const app = spawnInScratch(t, scratch, process.execPath, ['app.js', 'settings.json'])
  const line = await within(outputMatching(app, /^fresh-install-app (.+)$/m), 'the app\'s listening line', 30_000)
  const addresses = JSON.parse(line[1] ?? '') as { plain: string, http2: string, loaded: string[] }
  const modules = join(realpathSync(scratch.directory), 'node_modules')
  t.strictSame(addresses.loaded.filter((path) => !path.startsWith(modules)), [], 'fastify and fastify-forward-proxy were loaded from the scratch node_modules')
  return { plainUrl: addresses.plain, plainPort: Number(new URL(addresses.plain).port), http2Url: addresses.http2 }
}

/**
 * Spawns a command in the scratch folder as its own process group (npx runs the bin as a
 * grandchild), all of which is ended at teardown: SIGTERM, then SIGKILL if it lingers.
 */
function spawnInScratch (t: Test, scratch: Scratch, command: string, args: string[]): BinProcess {
  const child = spawn(command, args, { cwd: scratch.directory, env: scratch.env, detached: true })
  const spawned = outputOf(child)
  t.teardown(async () => {
    const group = child.pid
    if (group === undefined) return
    if (child.exitCode === null && child.signalCode === null) {
      signalGroup(group, 'SIGTERM')
      const kill = setTimeout(() => signalGroup(group, 'SIGKILL'), 5_000)
      await spawned.exited
      clearTimeout(kill)
    }
    signalGroup(group, 'SIGKILL')
  })
  return spawned
}

/** Signals every process of a group; a group that has already gone is fine. */
function signalGroup (group: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-group, signal)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error
  }
}

/** Resolves with the first match of `pattern` in the process's stdout; rejects with its output if it exits first. */
function outputMatching (spawned: BinProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const match = pattern.exec(spawned.stdout())
      if (match === null) return
      spawned.child.stdout.removeListener('data', check)
      resolve(match)
    }
    spawned.child.stdout.on('data', check)
    spawned.exited.then((code) => reject(new Error(`exited ${String(code)} before it was ready:\n${spawned.stdout()}\n${spawned.stderr()}`)), reject)
    check()
  })
}

async function checkHealth (t: Test, proxy: ProxyEndpoints): Promise<void> {
  const health = await request(`${proxy.plainUrl}/healthz`)
  t.equal(health.statusCode, 200, 'GET /healthz: the app route answers without proxy credentials')
  t.same(await health.body.json(), { status: 'ok' }, 'GET /healthz body')
}

/** Every proxy feature the smoke covers, against one running proxy. */
async function checkProxy (t: Test, proxy: ProxyEndpoints, context: Context): Promise<void> {
  await t.test('http:// forwarding (absolute form) reaches the origin', (t) => checkForwarding(t, proxy, context))
  await t.test('CONNECT over HTTP/1.1 to an opaque destination: 200, bytes both ways', (t) => checkHttp1Connect(t, proxy, context))
  await t.test('CONNECT over HTTP/2 on the TLS listener: 200, bytes both ways; 407 without credentials', (t) => checkHttp2Connect(t, proxy, context))
  await t.test('intercepted HTTPS request: the client trusts the operator CA, the origin sees the injected header and no Proxy-Authorization', (t) => checkInterception(t, proxy, context))
  await t.test('WebSocket through an intercepted tunnel: 101, a frame echoes', (t) => checkWebSocket(t, proxy, context))
  await t.test('407 without credentials, nothing dialed', (t) => checkAuthenticationRequired(t, proxy, context))
  await t.test('403 for a denied host and for a port outside allowedPorts, nothing dialed', (t) => checkDenied(t, proxy, context))
}

async function checkForwarding (t: Test, proxy: ProxyEndpoints, { origins }: Context): Promise<void> {
  const authority = `127.0.0.1:${origins.http.port}`
  const reply = await rawExchange(proxy.plainPort, `GET http://${authority}/forwarded?q=1 HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${PROXY_AUTHORIZATION}\r\nConnection: close\r\n\r\n`)
  t.equal(reply.status, 200, statusLine(reply.text))
  const echo = bodyOf(reply.text) as EchoedRequest
  t.equal(echo.method, 'GET', 'the origin got a GET')
  t.equal(echo.url, '/forwarded?q=1', 'the origin got the origin-form path')
  t.equal(echo.headers['proxy-authorization'], undefined, 'proxy credentials are not forwarded')
}

async function checkHttp1Connect (t: Test, proxy: ProxyEndpoints, { origins }: Context): Promise<void> {
  const target = `127.0.0.1:${origins.http.port}`
  const tunnel = await openTunnel(proxy.plainPort, target, { 'Proxy-Authorization': PROXY_AUTHORIZATION })
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200, statusLine(tunnel.head))
  const echo = bodyOf(await exchange(tunnel.socket, originGet('/through-http1-tunnel', target))) as EchoedRequest
  t.equal(echo.url, '/through-http1-tunnel', 'a request sent through the tunnel reached the origin and its answer came back')
}

async function checkHttp2Connect (t: Test, proxy: ProxyEndpoints, { pki, origins }: Context): Promise<void> {
  const target = `127.0.0.1:${origins.http.port}`
  const session = await connectHttp2Listener(t, proxy.http2Url, pki.operatorCa.cert)
  t.equal(session.alpnProtocol, 'h2', 'the TLS listener speaks HTTP/2')

  const stream = session.request({ ':method': 'CONNECT', ':authority': target, 'proxy-authorization': PROXY_AUTHORIZATION }, { endStream: false })
  const head = await within(responseHead(stream), 'the HTTP/2 CONNECT answer')
  t.equal(head[':status'], 200, 'the CONNECT stream was answered 200')
  const echo = bodyOf(await exchange(stream, originGet('/through-http2-tunnel', target))) as EchoedRequest
  t.equal(echo.url, '/through-http2-tunnel', 'a request sent through the HTTP/2 stream reached the origin and its answer came back')

  const before = origins.http.accepts.accepted
  const anonymous = session.request({ ':method': 'CONNECT', ':authority': target }, { endStream: false })
  const refused = await within(responseHead(anonymous), 'the anonymous HTTP/2 CONNECT answer')
  anonymous.close()
  t.equal(refused[':status'], 407, 'a CONNECT stream without credentials gets 407')
  t.match(String(refused['proxy-authenticate']), /^Basic /, 'with a Basic challenge')
  t.match(String(refused['proxy-status']), /^fastify-forward-proxy; error=http_request_denied/, 'and Proxy-Status')
  await expectNothingDialedBefore(t, origins.http.accepts, 'nothing dialed for the anonymous stream', { after: before })
  session.close()
}

async function checkInterception (t: Test, proxy: ProxyEndpoints, { pki, origins, injected }: Context): Promise<void> {
  const agent = new ProxyAgent({ uri: proxy.plainUrl, token: PROXY_AUTHORIZATION, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  const response = await request(`https://${INTERCEPTED_HOST}:${origins.tls.port}/intercepted`, { dispatcher: agent, headers: { 'x-client': 'smoke' } })
  t.equal(response.statusCode, 200, 'the client accepted the leaf minted from the operator CA (it trusts nothing else)')
  const seen = await response.body.json() as SeenRequest
  t.equal(seen.url, '/intercepted', 'the origin got the path')
  t.equal(seen.headers[INJECTED_HEADER], injected, 'the header rule injected its header inside the decrypted tunnel')
  t.equal(seen.headers['x-client'], 'smoke', 'the client\'s own headers pass')
  t.equal(seen.headers['proxy-authorization'], undefined, 'proxy credentials never reach the destination')
}

async function checkWebSocket (t: Test, proxy: ProxyEndpoints, { pki, origins, injected }: Context): Promise<void> {
  const target = `${INTERCEPTED_HOST}:${origins.ws.port}`
  const socket = await openInterceptedTls(t, proxy.plainPort, target, { ca: pki.operatorCa.cert, servername: INTERCEPTED_HOST }, { 'Proxy-Authorization': PROXY_AUTHORIZATION })
  const received = collect(socket)
  const key = randomBytes(16).toString('base64')
  socket.write(`GET /chat HTTP/1.1\r\nHost: ${target}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n\r\n`)
  const head = (await received.until((bytes) => bytes.includes('\r\n\r\n'), 'the upgrade answer')).toString('latin1')
  t.match(head, /^HTTP\/1\.1 101 /, 'the upgrade was answered 101')
  t.ok(head.toLowerCase().includes(`\r\nsec-websocket-accept: ${acceptKey(key).toLowerCase()}\r\n`), 'with the origin\'s accept key')
  const framesAfterHead = (bytes: Buffer): string[] => readFrames(bytes.subarray(bytes.indexOf('\r\n\r\n') + 4))
  socket.write(textFrame('ping through the proxy', true))
  await received.until((bytes) => framesAfterHead(bytes).length > 0, 'the echoed frame')
  t.same(framesAfterHead(received.bytes()), ['ping through the proxy'], 'the origin echoed the frame')
  t.equal(origins.ws.upgrades.at(-1)?.headers[INJECTED_HEADER], injected, 'the upgrade request got the injected header')
  socket.destroy()
}

async function checkAuthenticationRequired (t: Test, proxy: ProxyEndpoints, { origins }: Context): Promise<void> {
  const before = origins.http.accepts.accepted
  const tunnel = await openTunnel(proxy.plainPort, `127.0.0.1:${origins.http.port}`)
  tunnel.socket.destroy()
  t.equal(tunnel.status, 407, statusLine(tunnel.head))
  t.match(tunnel.head, /\r\nproxy-authenticate: Basic realm="[^"]*"/i, 'with a Basic challenge')
  t.match(tunnel.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_denied/i, 'and Proxy-Status')
  await expectNothingDialedBefore(t, origins.http.accepts, 'the origin got no connection', { after: before })
}

async function checkDenied (t: Test, proxy: ProxyEndpoints, { origins }: Context): Promise<void> {
  const credentials = { 'Proxy-Authorization': PROXY_AUTHORIZATION }
  // The origins serve every proxy checked: what an earlier check dialed (or probed) comes first.
  const before = origins.notAllowed.accepts.accepted
  const host = await openTunnel(proxy.plainPort, `${DENIED_HOST}:443`, credentials)
  host.socket.destroy()
  t.equal(host.status, 403, statusLine(host.head))
  t.match(host.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_denied; details="host not allowed"/i, 'deniedHosts: Proxy-Status http_request_denied')

  const port = await openTunnel(proxy.plainPort, `127.0.0.1:${origins.notAllowed.port}`, credentials)
  port.socket.destroy()
  t.equal(port.status, 403, statusLine(port.head))
  t.match(port.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_denied; details="port not allowed"/i, 'allowedPorts: Proxy-Status http_request_denied')
  await expectNothingDialedBefore(t, origins.notAllowed.accepts, 'the port outside allowedPorts got no connection', { after: before })
}

/** What the scratch app's onRequest hook recorded of one CONNECT. */
interface SeenConnect {
  httpVersion: string
  url: string
  originalUrl: string
  proxyDestination: { host: string, port: number } | null
}

/**
 * The application's hooks see a CONNECT routed under `/`, with the `host:port` target as
 * `request.originalUrl` and in `request.proxyDestination`, over HTTP/1.1 and HTTP/2 alike.
 */
async function checkConnectAsSeenByHooks (t: Test, proxy: ProxyEndpoints, { origins }: Context): Promise<void> {
  const response = await request(`${proxy.plainUrl}/connects`)
  t.equal(response.statusCode, 200, 'GET /connects (an app route)')
  const seen = await response.body.json() as SeenConnect[]
  const target = `127.0.0.1:${origins.http.port}`
  for (const httpVersion of ['1.1', '2.0']) {
    const connect = seen.find((entry) => entry.httpVersion === httpVersion && entry.originalUrl === target)
    t.ok(connect, `the onRequest hook saw the HTTP/${httpVersion} CONNECT to ${target}`)
    t.equal(connect?.url, '/', `HTTP/${httpVersion}: request.url is /`)
    t.same(connect?.proxyDestination, { host: '127.0.0.1', port: origins.http.port }, `HTTP/${httpVersion}: request.proxyDestination is the target`)
  }
  t.strictSame(seen.filter((entry) => entry.url !== '/'), [], 'every CONNECT is routed under /')
  t.ok(seen.some((entry) => entry.originalUrl === `${INTERCEPTED_HOST}:${origins.tls.port}`), 'the intercepted tunnel\'s CONNECT was seen too')
}

/** An HTTP/1.1 request to the echo origin that asks it to close the connection after answering. */
function originGet (path: string, authority: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`
}

/** The first line of a raw HTTP/1.1 response, for assertion messages. */
function statusLine (response: string): string {
  const end = response.indexOf('\r\n')
  return end === -1 ? response : response.slice(0, end)
}

/** The JSON body of a raw HTTP/1.1 response. */
function bodyOf (response: string): unknown {
  const end = response.indexOf('\r\n\r\n')
  if (end === -1) throw new Error(`no response head in: ${response}`)
  return JSON.parse(response.slice(end + 4))
}

/** Writes `text` on a tunnel (socket or HTTP/2 stream) and resolves with everything read until it ends. */
function exchange (transport: Duplex, text: string): Promise<string> {
  const done = new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = []
    transport.on('data', (chunk: Buffer) => chunks.push(chunk))
    transport.once('end', () => resolve(Buffer.concat(chunks).toString('latin1')))
    transport.once('error', reject)
  })
  transport.write(text)
  return within(done, 'the answer through the tunnel')
}

/** Resolves with an HTTP/2 stream's response headers. */
function responseHead (stream: ClientHttp2Stream): Promise<IncomingHttpHeaders> {
  return new Promise((resolve, reject) => {
    stream.once('response', (headers) => resolve(headers))
    stream.once('error', reject)
    stream.once('close', () => reject(new Error(`stream closed without a response (code ${stream.rstCode})`)))
  })
}

/** Everything a TLS socket has received, and a way to wait for enough of it. */
interface Received {
  bytes: () => Buffer
  until: (done: (bytes: Buffer) => boolean, what: string) => Promise<Buffer>
}

function collect (socket: TLSSocket): Received {
  let bytes = Buffer.alloc(0)
  const waiters: Array<() => void> = []
  const wake = (): void => { for (const waiter of waiters.splice(0)) waiter() }
  socket.on('data', (chunk: Buffer) => { bytes = Buffer.concat([bytes, chunk]); wake() })
  socket.once('close', wake)
  return {
    bytes: () => bytes,
    until: (done, what) => within((async () => {
      while (!done(bytes)) {
        if (socket.destroyed) throw new Error(`the socket closed before ${what}; got: ${bytes.toString('latin1')}`)
        await new Promise<void>((resolve) => waiters.push(resolve))
      }
      return bytes
    })(), what)
  }
}
