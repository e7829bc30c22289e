import { test, type Test } from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, runBin, type BinProcess } from './helpers/cli-bin'
import { childEnv } from './helpers/child-node'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { closedPort } from './helpers/closed-port'
import { eventually } from './helpers/eventually'
import { startHttpsOrigin } from './helpers/https-destination'
import { startOrigin } from './helpers/servers'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'

// Each way a Node program can send its requests through the proxy (docs/interception.md, "Node.js
// clients"), run as its own Node process against the bin with authentication. A request went
// through the proxy when the proxy logged an access line for its origin's port; it went direct
// when it succeeded although HTTP(S)_PROXY named a port nothing listens on.

const ROOT = join(__dirname, '..')
const USER = 'alice'
const PASSWORD = 'pw-node-clients'

// Prints { status, body } or { error } as JSON; CLIENT_URL is the target.
const PRELUDE = `
const url = process.env.CLIENT_URL
const done = (result) => { process.stdout.write(JSON.stringify(result)) }
const failed = (error) => { done({ error: String(error && error.message) + (error && error.cause ? ' / ' + String(error.cause.message) : '') }); process.exitCode = 1 }
const fromFetch = async (response) => done({ status: response.status, body: await response.text() })
const fromUndici = async (response) => done({ status: response.statusCode, body: await response.body.text() })
`

/** The client programs, each a way documented in docs/interception.md. */
const CLIENTS = {
  httpGet: `require(url.startsWith('https:') ? 'node:https' : 'node:http').get(url, (response) => {
    let body = ''
    response.setEncoding('utf8')
    response.on('data', (chunk) => { body += chunk })
    response.on('end', () => done({ status: response.statusCode, body }))
  }).on('error', failed)`,
  fetch: 'fetch(url).then(fromFetch, failed)',
  fetchWithEnvGlobalDispatcher: `const { setGlobalDispatcher, EnvHttpProxyAgent } = require('undici')
    setGlobalDispatcher(new EnvHttpProxyAgent())
    fetch(url).then(fromFetch, failed)`,
  undiciEnvAgent: `const { request, EnvHttpProxyAgent } = require('undici')
    request(url, { dispatcher: new EnvHttpProxyAgent() }).then(fromUndici, failed)`,
  undiciProxyAgentUri: `const { request, ProxyAgent } = require('undici')
    request(url, { dispatcher: new ProxyAgent(process.env.CLIENT_PROXY) }).then(fromUndici, failed)`,
  undiciProxyAgentToken: `const { request, ProxyAgent } = require('undici')
    const proxy = new URL(process.env.CLIENT_PROXY)
    const token = 'Basic ' + Buffer.from(decodeURIComponent(proxy.username) + ':' + decodeURIComponent(proxy.password)).toString('base64')
    request(url, { dispatcher: new ProxyAgent({ uri: proxy.origin, token }) }).then(fromUndici, failed)`,
  fetchWithProxyAgentNoCredentials: `const { ProxyAgent } = require('undici')
    fetch(url, { dispatcher: new ProxyAgent(new URL(process.env.CLIENT_PROXY).origin) }).then(fromFetch, failed)`
} as const

interface ClientResult { status?: number, body?: string, error?: string }

/** Runs one client program with the proxy variables set to `proxyUrl` (and NO_PROXY empty). */
async function runClient (client: keyof typeof CLIENTS, url: string, proxyUrl: string, env: Record<string, string> = {}): Promise<ClientResult> {
  const environment = childEnv({
    CLIENT_URL: url,
    CLIENT_PROXY: proxyUrl,
    HTTP_PROXY: proxyUrl,
    HTTPS_PROXY: proxyUrl,
    // Empty on purpose: a loopback target must not be excluded, whatever the test's environment says.
    NO_PROXY: '',
    http_proxy: undefined,
    https_proxy: undefined,
    no_proxy: undefined,
    all_proxy: undefined,
    ALL_PROXY: undefined,
    NODE_USE_ENV_PROXY: undefined,
    ...env
  })
  return await new Promise((resolve) => {
    execFile(process.execPath, ['-e', PRELUDE + CLIENTS[client]], { cwd: ROOT, env: environment, timeout: 20_000 }, (error, stdout, stderr) => {
      try {
        resolve(JSON.parse(stdout) as ClientResult)
      } catch {
        resolve({ error: `no result: ${stdout} ${stderr} ${String(error)}` })
      }
    })
  })
}

interface AccessEntry { kind: string, user: string | null, destination: string, decision: string, status: number }

/** The proxy's access entries for `127.0.0.1:port`. */
function accessTo (bin: BinProcess, port: number): AccessEntry[] {
  return bin.stdout().split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return []
    const entry = (JSON.parse(line) as { access?: AccessEntry }).access
    return entry?.destination === `127.0.0.1:${port}` ? [entry] : []
  })
}

/** Starts the bin with one user, loopback destinations allowed; returns it and its proxy URL with credentials. */
async function startProxyBin (t: Test): Promise<{ bin: BinProcess, proxyUrl: string }> {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], users: { [USER]: PASSWORD }, destinations: LOOPBACK_ORIGINS, log: { level: 'info' } }))
  const bin = runBin(t, ['--config', file])
  const port = portOf((await listeningUrls(bin))[0])
  return { bin, proxyUrl: `http://${USER}:${PASSWORD}@127.0.0.1:${port}` }
}

interface ClientRun {
  /** The origin's scheme (default http). */
  readonly scheme?: 'http' | 'https'
  /** More environment for the client (NODE_USE_ENV_PROXY). */
  readonly env?: Record<string, string>
}

/** Asserts that `client` reached a fresh origin and that the proxy logged the request (a forward or a tunnel) as alice's. */
async function assertThroughProxy (t: Test, bin: BinProcess, proxyUrl: string, client: keyof typeof CLIENTS, { scheme = 'http', env = {} }: ClientRun = {}): Promise<ClientResult> {
  const origin = await freshOrigin(t, scheme, client)
  const result = await runClient(client, origin.url, proxyUrl, { ...origin.env, ...env })
  t.equal(result.status, 200, `${client} (${scheme}): answered 200 ${result.error ?? ''}`)
  const logged = await eventually(() => accessTo(bin, origin.port).some((entry) => entry.user === USER && entry.decision === 'allow'), 5000).then(() => true, () => false)
  t.ok(logged, `${client} (${scheme}): the request went through the proxy as ${USER} (its access line names the origin)`)
  return result
}

/** Asserts that `client` reached a fresh origin directly: HTTP(S)_PROXY names a closed port, and the request still succeeds. */
async function assertDirect (t: Test, client: keyof typeof CLIENTS, { scheme = 'http', env = {} }: ClientRun = {}): Promise<void> {
  const origin = await freshOrigin(t, scheme, client)
  const result = await runClient(client, origin.url, `http://${USER}:${PASSWORD}@127.0.0.1:${await closedPort()}`, { ...origin.env, ...env })
  t.equal(result.status, 200, `${client} (${scheme}): answered 200 although the proxy variables name a closed port: it ignored them ${result.error ?? ''}`)
}

async function freshOrigin (t: Test, scheme: 'http' | 'https', client: string): Promise<{ url: string, port: number, env: Record<string, string> }> {
  if (scheme === 'http') {
    const origin = await startOrigin(t)
    return { url: `http://127.0.0.1:${origin.port}/${client}`, port: origin.port, env: {} }
  }
  const fixture = await makeSelfSignedCertificate(t.testdir())
  const origin = await startHttpsOrigin(t, { cert: fixture.cert, key: fixture.key })
  return { url: `https://127.0.0.1:${origin.port}/${client}`, port: origin.port, env: { NODE_EXTRA_CA_CERTS: fixture.certPath } }
}

/**
 * Whether this Node reads HTTP(S)_PROXY for `http.get`, `https.get` and `fetch` when
 * NODE_USE_ENV_PROXY=1: from 22.21 on the 22 line and 24.5 on the 24 line; never on 20.
 */
function nodeUsesEnvProxy (version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  return major > 24 || (major === 24 && minor >= 5) || (major === 22 && minor >= 21)
}

test('Node clients: undici ProxyAgent goes through an authenticated proxy with the credentials in its uri or as a Basic token; without them it fails with 407', async (t) => {
  const { bin, proxyUrl } = await startProxyBin(t)
  await assertThroughProxy(t, bin, proxyUrl, 'undiciProxyAgentUri')
  await assertThroughProxy(t, bin, proxyUrl, 'undiciProxyAgentToken')

  const origin = await startOrigin(t)
  const refused = await runClient('fetchWithProxyAgentNoCredentials', `http://127.0.0.1:${origin.port}/`, proxyUrl)
  // fetch reports the proxy's 407 only as a cancelled request.
  t.match(refused, { status: undefined, error: /Request was cancelled|407/ }, 'fetch fails without the credentials')
  const logged = await eventually(() => accessTo(bin, origin.port).some((entry) => entry.status === 407 && entry.decision === 'deny'), 5000).then(() => true, () => false)
  t.ok(logged, 'the proxy answered the CONNECT with 407')
  t.equal(origin.requests.length, 0, 'nothing reached the origin')
})

test('Node clients: undici EnvHttpProxyAgent, as a request dispatcher or as the global dispatcher of fetch, sends http:// and https:// requests through the proxy HTTP(S)_PROXY name, on every Node', async (t) => {
  const { bin, proxyUrl } = await startProxyBin(t)
  await assertThroughProxy(t, bin, proxyUrl, 'undiciEnvAgent')
  await assertThroughProxy(t, bin, proxyUrl, 'fetchWithEnvGlobalDispatcher')
  await assertThroughProxy(t, bin, proxyUrl, 'fetchWithEnvGlobalDispatcher', { scheme: 'https' })
})

test('Node clients: without NODE_USE_ENV_PROXY, global fetch and http.get ignore HTTP(S)_PROXY and go direct', async (t) => {
  await assertDirect(t, 'fetch')
  await assertDirect(t, 'fetch', { scheme: 'https' })
  await assertDirect(t, 'httpGet')
})

test(`Node clients: with NODE_USE_ENV_PROXY=1, Node ${process.versions.node} ${nodeUsesEnvProxy() ? 'sends' : 'does not send'} http.get, https.get and fetch through HTTP(S)_PROXY`, async (t) => {
  const env = { NODE_USE_ENV_PROXY: '1' }
  if (!nodeUsesEnvProxy()) {
    await assertDirect(t, 'httpGet', { env })
    await assertDirect(t, 'httpGet', { env, scheme: 'https' })
    await assertDirect(t, 'fetch', { env })
    await assertDirect(t, 'fetch', { env, scheme: 'https' })
    return
  }
  const { bin, proxyUrl } = await startProxyBin(t)
  const forwarded = await assertThroughProxy(t, bin, proxyUrl, 'httpGet', { env })
  t.match(JSON.parse(forwarded.body ?? '{}'), { headers: { via: '1.1 fastify-forward-proxy' } }, 'http.get sends http:// requests in absolute form: the proxy forwarded it and added its Via')
  await assertThroughProxy(t, bin, proxyUrl, 'httpGet', { env, scheme: 'https' })
  await assertThroughProxy(t, bin, proxyUrl, 'fetch', { env })
  await assertThroughProxy(t, bin, proxyUrl, 'fetch', { env, scheme: 'https' })
})
