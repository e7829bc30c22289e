// The origin of the comparison: nginx when installed (generated configuration in the run's
// temporary folder, loopback only), else bench/origin.mjs. Serves /small (13 bytes) and /big
// (64 MiB) in plain HTTP on 127.0.0.1 and over TLS (leaf from the test destination CA) on
// 127.0.0.2, the address the proxies intercept. SSE always comes from bench/origin.mjs (nginx
// does not stream generated events).
import { mkdirSync, writeFileSync, chmodSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { makeCa, makeLeaf } from '../pki.mjs'
import { freePort, startProcess, waitForPort } from './processes.mjs'

export const PLAIN_HOST = '127.0.0.1'
export const TLS_HOST = '127.0.0.2'

/**
 * The suites' test PKI in `directory`: the destination CA, the operator CA that signs
 * intercepted leaves, and the origin's leaf (from the destination CA, for both origin hosts).
 */
export function makeOriginPki (directory) {
  const destinationCa = makeCa(directory, 'destination-ca')
  const operatorCa = makeCa(directory, 'operator-ca')
  return { destinationCa, operatorCa, origin: makeLeaf(directory, 'origin', destinationCa, [TLS_HOST, PLAIN_HOST]) }
}
const NODE_ORIGIN = fileURLToPath(new URL('../origin.mjs', import.meta.url))

function nginxConfig (directory, httpPort, httpsPort, leaf, httpsOpaquePort) {
  return `worker_processes 1;
worker_rlimit_nofile 20000;
daemon off;
master_process off;
pid ${directory}/nginx.pid;
error_log ${directory}/nginx-error.log warn;
events { worker_connections 16000; }
http {
  access_log off;
  client_body_temp_path ${directory}/nginx-tmp/body;
  proxy_temp_path ${directory}/nginx-tmp/proxy;
  fastcgi_temp_path ${directory}/nginx-tmp/fastcgi;
  uwsgi_temp_path ${directory}/nginx-tmp/uwsgi;
  scgi_temp_path ${directory}/nginx-tmp/scgi;
  default_type text/plain;
  sendfile on;
  tcp_nodelay on;
  keepalive_requests 10000000;
  keepalive_timeout 300s;
  client_header_timeout 300s;
  root ${directory}/www;
  server { listen ${PLAIN_HOST}:${httpPort}; }
${leaf === undefined ? '' : tlsServer(httpsPort, leaf, httpsOpaquePort)}}
`
}

function tlsServer (httpsPort, leaf, httpsOpaquePort) {
  return `  server {
    listen ${TLS_HOST}:${httpsPort} ssl;
    listen ${PLAIN_HOST}:${httpsOpaquePort} ssl;
    ssl_certificate ${leaf.certPath};
    ssl_certificate_key ${leaf.keyPath};
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:bench:10m;
  }
`
}

/**
 * Starts nginx at `nginx` with its configuration in `directory`: /small and /big in plain HTTP
 * on 127.0.0.1, and over TLS on 127.0.0.2 (`httpsPort`) and 127.0.0.1 (`httpsOpaquePort`) when
 * `leaf` (the TLS origin's certificate) is given.
 */
export async function startNginx (nginx, directory, leaf) {
  const www = join(directory, 'www')
  mkdirSync(www, { recursive: true })
  mkdirSync(join(directory, 'nginx-tmp'), { recursive: true })
  writeFileSync(join(www, 'small'), 'hello, world\n')
  writeFileSync(join(www, 'big'), Buffer.alloc(64 * 1024 * 1024, 'x'))
  chmodSync(www, 0o755)
  const httpPort = await freePort(PLAIN_HOST)
  const httpsPort = leaf === undefined ? undefined : await freePort(TLS_HOST)
  // TLS on 127.0.0.1 too, which no proxy intercepts: the opaque tunnel scenarios of clients that
  // speak TLS inside (hey).
  const httpsOpaquePort = leaf === undefined ? undefined : await freePort(PLAIN_HOST)
  const configPath = join(directory, 'nginx.conf')
  writeFileSync(configPath, nginxConfig(directory, httpPort, httpsPort, leaf, httpsOpaquePort))
  const processes = [startProcess(nginx, ['-p', directory, '-c', configPath, '-e', join(directory, 'nginx-error.log')])]
  await waitForPort(PLAIN_HOST, httpPort, { ...processes[0], name: 'nginx' })
  if (httpsPort !== undefined) await waitForPort(TLS_HOST, httpsPort, { ...processes[0], name: 'nginx' })
  return { kind: 'nginx', httpPort, httpsPort, httpsOpaquePort, processes }
}

async function startNodeOrigin (host, extraArgs) {
  const port = await freePort(host)
  const started = startProcess(process.execPath, [NODE_ORIGIN, ...extraArgs], { env: { ...process.env, ORIGIN_HOST: host, ORIGIN_PORT: String(port) } })
  await waitForPort(host, port, { ...started, name: 'bench/origin.mjs' })
  return { port, started }
}

/**
 * Starts the origin: nginx at `nginxPath` if given, else two bench/origin.mjs processes; plus
 * one bench/origin.mjs on 127.0.0.1 for /sse. `leaf` is the TLS origin's certificate.
 */
export async function startOrigin (nginxPath, directory, leaf) {
  const sse = await startNodeOrigin(PLAIN_HOST, [])
  if (nginxPath !== undefined) {
    const origin = await startNginx(nginxPath, directory, leaf)
    return { ...origin, ssePort: sse.port, processes: [...origin.processes, sse.started] }
  }
  const plain = await startNodeOrigin(PLAIN_HOST, [])
  const tls = await startNodeOrigin(TLS_HOST, ['tls', leaf.keyPath, leaf.certPath])
  return { kind: 'node', httpPort: plain.port, httpsPort: tls.port, ssePort: sse.port, processes: [plain.started, tls.started, sse.started] }
}
