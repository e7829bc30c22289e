// The proxies of the comparison, each started from a configuration generated in the run's
// temporary folder, listening on 127.0.0.1: ours (the ready-to-run server built into dist/),
// Squid with ssl_bump and mitmproxy (mitmdump). Every one forwards http://, relays CONNECT
// tunnels opaquely, and intercepts tunnels to 127.0.0.2 only (leaves signed by the same operator
// CA, destinations verified against the test destination CA). The per-request suite
// (bench/compare/per-request.mjs) adds the floors (bench/floor-*.mjs, bench/proxy-server.mjs)
// and ours with the minimal and the full configuration, with a user and the access log on.
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { userInfo } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TLS_HOST } from './origin.mjs'
import { makeLeaf } from '../pki.mjs'
import { freePort, startPortPrinter, startProcess, waitForPort } from './processes.mjs'

const OUR_MAIN = fileURLToPath(new URL('../../dist/lib/cli/main.js', import.meta.url))

/**
 * Ours: `dist/lib/cli/main.js` with a generated configuration. `interceptHosts` (default
 * 127.0.0.2) are the intercepted CONNECT targets; `tlsListener` ({ cert, key }) adds an HTTP/2 +
 * HTTP/1.1 TLS listener, whose port is returned as `tlsPort`. `nodeArgs` (Node options before the
 * program) and `env` (added to the environment) are for bench/memory.mjs's variants; `extraConfig`
 * is merged into the configuration (the chained peer's `upstreamProxies`).
 */
export async function startOurs (options) {
  // A free port can be taken again before the server binds it (by another listener, or as the
  // local port of one of the many connections the harness makes): start again on new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOursOnce(options)
    } catch (error) {
      if (attempt === 3 || !String(error.message).includes('EADDRINUSE')) throw error
    }
  }
}

async function startOursOnce ({ directory, pki, maxTunnels, name = 'ours', interceptHosts = [TLS_HOST], tlsListener, nodeArgs = [], env = {}, extraConfig = {} }) {
  const port = await freePort()
  const tlsPort = tlsListener === undefined ? undefined : await freePort()
  const config = {
    listen: [
      { host: '127.0.0.1', port },
      ...(tlsListener === undefined ? [] : [{ host: '127.0.0.1', port: tlsPort, tls: tlsListener, http2: true }])
    ],
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.0/8'] },
    limits: { maxConcurrentTunnels: maxTunnels },
    interception: {
      hosts: interceptHosts,
      ca: { cert: pki.operatorCa.certPath, key: pki.operatorCa.keyPath },
      trustedDestinationCa: pki.destinationCa.certPath
    },
    log: { level: 'warn' },
    ...extraConfig
  }
  return launchBin({ directory, name, config, ports: [port, tlsPort], nodeArgs, env })
}

/**
 * Runs dist/lib/cli/main.js with `config` (written to `<name>.json`), NODE_ENV=production and
 * `nodeArgs` before it (the harness passes those of `npm start`), its stdout (the log) piped to
 * the harness or, with `stdoutPath`, into that file; resolves once every port in `ports` accepts
 * connections.
 */
async function launchBin ({ directory, name, config, ports, nodeArgs = [], env = {}, stdoutPath }) {
  const configPath = join(directory, `${name}.json`)
  writeFileSync(configPath, JSON.stringify(config, null, 2))
  const started = startProcess(process.execPath, [...nodeArgs, OUR_MAIN, '--config', configPath], { env: { ...process.env, NODE_ENV: 'production', ...env }, stdoutPath })
  for (const port of ports) if (port !== undefined) await waitForPort('127.0.0.1', port, { ...started, name }, 60_000)
  return { port: ports[0], tlsPort: ports[1], started, pid: started.child.pid }
}

/** The proxy user of the per-request suite: ours and Squid ask every client for it (Basic). */
export const BENCH_USER = { name: 'bench', password: 'bench-proxy-password' }
/** The `Proxy-Authorization` (Basic) that carries `user`'s credentials. */
export const basicAuthorization = (user) => `Basic ${Buffer.from(`${user.name}:${user.password}`).toString('base64')}`
/** {@link BENCH_USER}'s `Proxy-Authorization`, as the clients that send the header themselves (the CONNECT client, undici) need it. */
export const BENCH_AUTHORIZATION = basicAuthorization(BENCH_USER)
/** Where the suite's proxies write their access log: a file in their folder, or /dev/null (BENCH_ACCESS_LOG=null). */
const accessLogPath = (directory, accessLog) => (accessLog === 'null' ? '/dev/null' : join(directory, 'access.log'))
/** The hosts the full configuration intercepts: the origin's TLS address, and a name no traffic goes to. */
export const FULL_INTERCEPT_HOSTS = [TLS_HOST, 'api.example.com']

/**
 * The per-request suite's configuration of ours on `port`. `minimal`: `listen`, one user (Basic),
 * `destinations` allowing loopback. `full`: the same plus `interception` (`operatorCa`,
 * `trustedDestinationCa` `destinationCa`, two hosts: 127.0.0.2, the origin's TLS address, and
 * api.example.com; http:// forwarding goes to 127.0.0.1, so neither) and one header rule for those
 * two hosts. No `log` key: the default level, `info`, one access line per request.
 */
export function suiteConfig (variant, port, { operatorCa, destinationCa }) {
  const config = {
    listen: [{ host: '127.0.0.1', port }],
    users: { [BENCH_USER.name]: BENCH_USER.password },
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.0/8'] }
  }
  if (variant === 'full') {
    config.interception = {
      hosts: FULL_INTERCEPT_HOSTS,
      ca: { cert: operatorCa.certPath, key: operatorCa.keyPath },
      trustedDestinationCa: destinationCa.certPath
    }
    config.headers = [{ hosts: FULL_INTERCEPT_HOSTS, set: { 'X-Bench-Rule': 'full-config' }, remove: ['Cookie'] }]
  }
  return config
}

/**
 * Ours as users run it (the per-request suite): the bin with {@link suiteConfig}'s `variant`
 * (stdout, the access lines, into a file or /dev/null). `configKeys` are added to the file's top
 * level; `env` to the process's environment.
 */
export async function oursAsRun (variant, { directory, pki, nodeArgs = [], env = {}, accessLog, configKeys = {} }) {
  const port = await freePort()
  const config = { ...suiteConfig(variant, port, pki), ...configKeys }
  return launchBin({ directory, name: `ours-${variant}`, config, ports: [port], nodeArgs, env, stdoutPath: accessLogPath(directory, accessLog) })
}

/**
 * Squid's configuration: bump at step 1 (client-first: the leaf is generated from the CONNECT
 * target, nothing is peeked or stared at) for `interceptHosts`, splice for the rest. With
 * `users`, Basic proxy authentication through basic_ncsa_auth (an htpasswd file made with
 * `openssl passwd -apr1`); with `accessLog`, the access log on, in Squid's native format.
 */
function squidConfig ({ directory, port, pki, tools, interceptHosts, users, accessLog }) {
  const auth = users === undefined
    ? 'http_access allow all'
    : `auth_param basic program ${tools.ncsaAuth} ${directory}/passwd
auth_param basic realm bench
acl authenticated proxy_auth REQUIRED
http_access allow authenticated
http_access deny all`
  return `http_port 127.0.0.1:${port} ssl-bump tls-cert=${pki.operatorCa.certPath} tls-key=${pki.operatorCa.keyPath} generate-host-certificates=on
sslcrtd_program ${tools.certgen} -s ${directory}/squid-ssl-db -M 16MB
sslcrtd_children 4 startup=1 idle=1
tls_outgoing_options cafile=${pki.destinationCa.certPath}
acl intercept_hosts dstdomain -n ${interceptHosts.join(' ')}
ssl_bump bump intercept_hosts
ssl_bump splice all
${auth}
cache deny all
cache_mem 8 MB
access_log ${accessLog === undefined ? 'none' : `stdio:${accessLogPath(directory, accessLog)} squid`}
cache_log ${directory}/squid-cache.log
cache_store_log none
pid_filename ${directory}/squid.pid
coredump_dir ${directory}
max_filedescriptors 20000
pinger_enable off
via off
forwarded_for transparent
shutdown_lifetime 0 seconds
client_lifetime 1 hour
read_timeout 5 minutes
`
}

/**
 * Squid (squid-openssl): ssl_bump of 127.0.0.2 (the per-request suite: of the full
 * configuration's two hosts), no authentication and no access log unless the context asks
 * (`users`: { name: password }, `accessLog`: 'file' or 'null').
 */
async function squid ({ directory, pki, tools, users, accessLog, interceptHosts = [TLS_HOST] }) {
  const port = await freePort()
  const configPath = join(directory, 'squid.conf')
  writeFileSync(configPath, squidConfig({ directory, port, pki, tools, interceptHosts, users, accessLog }))
  if (users !== undefined) {
    const lines = Object.entries(users).map(([name, password]) => `${name}:${execFileSync('openssl', ['passwd', '-apr1', password], { encoding: 'utf8' }).trim()}\n`)
    writeFileSync(join(directory, 'passwd'), lines.join(''), { mode: 0o644 })
  }
  execFileSync(tools.certgen, ['-c', '-s', join(directory, 'squid-ssl-db'), '-M', '16MB'], { stdio: 'ignore' })
  if (userInfo().uid === 0) {
    // Squid started by root runs as the "proxy" user: let it reach its files.
    const { uid, gid } = userIds('proxy')
    chmodSync(dirname(directory), 0o711)
    for (const path of [directory, pki.operatorCa.keyPath]) chownSync(path, uid, gid)
    execFileSync('chown', ['-R', `${uid}:${gid}`, join(directory, 'squid-ssl-db')])
  }
  // A service name of its own: Squid names its /dev/shm segments after it, and a Squid killed by an
  // earlier run leaves them behind, which a Squid of another user then cannot open.
  const started = startProcess(tools.squid, ['-n', `ffpbench${process.pid}p${port}`, '-N', '-f', configPath])
  return { port, started }
}

function userIds (name) {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${name}:`))
  if (line === undefined) throw new Error(`user ${name} not found`)
  const [, , uid, gid] = line.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}

async function mitmproxy ({ directory, pki, tools }) {
  const port = await freePort()
  const confdir = join(directory, 'mitmproxy')
  mkdirSync(confdir, { mode: 0o700 })
  // mitmproxy reads its CA (key then certificate, one PEM file) from its confdir.
  writeFileSync(join(confdir, 'mitmproxy-ca.pem'), readFileSync(pki.operatorCa.keyPath, 'utf8') + readFileSync(pki.operatorCa.certPath, 'utf8'))
  chmodSync(join(confdir, 'mitmproxy-ca.pem'), 0o600)
  const escapedHost = TLS_HOST.replaceAll('.', '\\.')
  const started = startProcess(tools.mitmdump, [
    '--quiet', '--listen-host', '127.0.0.1', '--listen-port', String(port),
    '--set', `confdir=${confdir}`,
    '--allow-hosts', `^${escapedHost}(:|$)`,
    '--set', `ssl_verify_upstream_trusted_ca=${pki.destinationCa.certPath}`,
    '--set', 'stream_large_bodies=1m',
    '--set', 'termlog_verbosity=error'
  ])
  return { port, started }
}

/**
 * Ours chained through ours (`upstreamProxies`): the front proxy, which the clients use and which
 * intercepts as usual, sends every tunnel and http:// request through a second instance that
 * relays opaquely. The CPU and memory reported are the front's; `extraProcesses` is the second.
 */
async function chainedOurs (context) {
  const upstream = await startOurs({ ...context, name: 'upstream', interceptHosts: ['nothing.invalid'], extraConfig: { via: 'upstream' } })
  const front = await startOurs({ ...context, name: 'front', extraConfig: { upstreamProxies: [{ hosts: ['*'], url: `http://127.0.0.1:${upstream.port}` }] } })
  return { ...front, extraProcesses: [upstream.started] }
}

/** Proxies known to the harness: name, label for the table, the tool they need, and how to start them. */
export const PEERS = [
  { name: 'ours', label: 'ours', needs: [], start: startOurs },
  { name: 'chained', label: 'ours through ours', needs: [], start: chainedOurs },
  { name: 'squid', label: 'Squid', needs: ['squid', 'certgen'], start: squid },
  { name: 'mitmproxy', label: 'mitmproxy', needs: ['mitmdump'], start: mitmproxy }
]

const here = (file) => fileURLToPath(new URL(file, import.meta.url))
// The floors and the plugin run with the Node options ours runs with (`context.nodeArgs`, those
// `npm start` passes), so that what differs between them and ours is code, not the runtime's set-up.
const printer = (file, label) => async ({ nodeArgs }) => {
  const { started, port } = await startPortPrinter(here(file), [], label, undefined, nodeArgs)
  return { port, started }
}

/** bench/floor-fastify-intercept.mjs with a leaf for the intercepted host, signed by the operator CA like the proxies' leaves. */
async function fastifyInterceptFloor ({ directory, pki, nodeArgs }) {
  const leaf = makeLeaf(directory, 'floor-intercept-leaf', pki.operatorCa, [TLS_HOST])
  const { started, port } = await startPortPrinter(here('../floor-fastify-intercept.mjs'), [leaf.certPath, leaf.keyPath, pki.destinationCa.certPath], 'floor-fastify-intercept', undefined, nodeArgs)
  return { port, started }
}

/**
 * The paths of the per-request suite (`BENCH_SUITE=per-request`): `scenarios` are the ones each
 * takes part in, `auth` whether its clients send the proxy user's credentials.
 */
export const SUITE_PEERS = [
  { name: 'node-floor', label: 'Node HTTP server, bare forward (bench/floor-node-proxy.mjs)', needs: [], scenarios: ['http'], auth: false, start: printer('../floor-node-proxy.mjs', 'floor-node-proxy') },
  { name: 'fastify-floor', label: 'Fastify route, bare forward (bench/floor-fastify-proxy.mjs)', needs: [], scenarios: ['http'], auth: false, start: printer('../floor-fastify-proxy.mjs', 'floor-fastify-proxy') },
  { name: 'ours-minimal', label: 'ours, bin, minimal configuration', needs: [], scenarios: ['http'], auth: true, start: (context) => oursAsRun('minimal', context) },
  { name: 'ours-full', label: 'ours, bin, full configuration', needs: [], scenarios: ['http', 'intercept-hey', 'connect'], auth: true, start: (context) => oursAsRun('full', context) },
  { name: 'squid', label: 'Squid, Basic auth, access log, ssl_bump', needs: ['squid', 'certgen', 'ncsaAuth'], scenarios: ['http', 'intercept-hey', 'connect'], auth: true, start: (context) => squid({ ...context, users: { [BENCH_USER.name]: BENCH_USER.password }, interceptHosts: FULL_INTERCEPT_HOSTS }) },
  { name: 'connect-floor', label: "Node HTTP server, 'connect' and relay (bench/floor-connect-proxy.mjs)", needs: [], scenarios: ['connect'], auth: false, start: printer('../floor-connect-proxy.mjs', 'floor-connect-proxy') },
  { name: 'plugin', label: 'ours, the plugin in a minimal Fastify app (bench/proxy-server.mjs)', needs: [], scenarios: ['connect'], auth: false, start: printer('../proxy-server.mjs', 'proxy-server') },
  // In the http:// rounds too, as the full bin: its memory after both is the floor of the bin's.
  { name: 'fastify-intercept-floor', label: 'Fastify route, bare intercepting forward (bench/floor-fastify-intercept.mjs)', needs: [], scenarios: ['http', 'intercept-hey'], auth: false, start: fastifyInterceptFloor },
  {
    name: 'fastify-connect-floor',
    label: 'Fastify CONNECT route, dial and relay (bench/floor-fastify-connect.mjs)',
    needs: [],
    scenarios: ['connect'],
    auth: false,
    start: printer('../floor-fastify-connect.mjs', 'floor-fastify-connect')
  }
]

/**
 * Starts `peer` (its files in a new folder under `context.directory`, so several instances can
 * run) and resolves with its port and process once it accepts connections.
 */
/**
 * Starts each of `peers` in turn (see {@link startPeer}), adding their processes to `processes`;
 * one that does not start is left out after `failed(peer, error)` is told. Resolves with those
 * running.
 */
export async function startPeers (peers, context, processes, failed) {
  const running = []
  for (const peer of peers) {
    try {
      const started = await startPeer(peer, context)
      processes.push(started.started, ...started.extraProcesses)
      running.push(started)
    } catch (error) {
      failed(peer, error)
    }
  }
  return running
}

export async function startPeer (peer, context) {
  const directory = mkdtempSync(join(context.directory, `${peer.name}-`))
  const { port, started, extraProcesses = [] } = await peer.start({ ...context, directory })
  await waitForPort('127.0.0.1', port, { ...started, name: peer.label }, 60_000)
  return { peer, port, started, extraProcesses, pid: started.child.pid }
}
