// The proxies of the comparison, each started from a configuration generated in the run's
// temporary folder, listening on 127.0.0.1: ours (the ready-to-run server built into dist/),
// Squid with ssl_bump and mitmproxy (mitmdump). Every one forwards http://, relays CONNECT
// tunnels opaquely, and intercepts tunnels to 127.0.0.2 only (leaves signed by the same operator
// CA, destinations verified against the test destination CA).
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { userInfo } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TLS_HOST } from './origin.mjs'
import { freePort, startProcess, waitForPort } from './processes.mjs'

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
  const configPath = join(directory, `${name}.json`)
  writeFileSync(configPath, JSON.stringify({
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
  }, null, 2))
  const started = startProcess(process.execPath, [...nodeArgs, OUR_MAIN, '--config', configPath], { env: { ...process.env, NODE_ENV: 'production', ...env } })
  await waitForPort('127.0.0.1', port, { ...started, name }, 60_000)
  if (tlsPort !== undefined) await waitForPort('127.0.0.1', tlsPort, { ...started, name }, 60_000)
  return { port, tlsPort, started, pid: started.child.pid }
}

function squidConfig (directory, port, pki, certgen) {
  return `http_port 127.0.0.1:${port} ssl-bump tls-cert=${pki.operatorCa.certPath} tls-key=${pki.operatorCa.keyPath} generate-host-certificates=on dynamic_cert_mem_cache_size=16MB
sslcrtd_program ${certgen} -s ${directory}/squid-ssl-db -M 16MB
sslcrtd_children 4 startup=1 idle=1
tls_outgoing_options cafile=${pki.destinationCa.certPath}
acl intercepted dst ${TLS_HOST}
acl step1 at_step SslBump1
acl step2 at_step SslBump2
ssl_bump splice !intercepted
ssl_bump peek step1
ssl_bump stare step2
ssl_bump bump all
http_access allow all
cache deny all
cache_mem 8 MB
access_log none
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

async function squid ({ directory, pki, tools }) {
  const port = await freePort()
  const configPath = join(directory, 'squid.conf')
  writeFileSync(configPath, squidConfig(directory, port, pki, tools.certgen))
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

/**
 * Starts `peer` (its files in a new folder under `context.directory`, so several instances can
 * run) and resolves with its port and process once it accepts connections.
 */
export async function startPeer (peer, context) {
  const directory = mkdtempSync(join(context.directory, `${peer.name}-`))
  const { port, started, extraProcesses = [] } = await peer.start({ ...context, directory })
  await waitForPort('127.0.0.1', port, { ...started, name: peer.label }, 60_000)
  return { peer, port, started, extraProcesses, pid: started.child.pid }
}
