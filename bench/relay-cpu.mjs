// The CPU cost of an opaque CONNECT relay per byte: one client downloads
// RELAY_MIB MiB (default 256) through a CONNECT tunnel from bench/tcp-origin.mjs's `blast`
// destination (64 MiB per connection, as many tunnels one after the other as it takes), through
// each proxy in turn, RELAY_ROUNDS rounds (default 5), alternating. Proxies (RELAY_PEERS,
// comma-separated, default all installed): `ours` (bench/proxy-server.mjs: the built plugin,
// logging off), `floor` (bench/relay-floor.mjs: a bare Node `net` relay with `pipe()`), `squid`
// (if installed; plain forward proxy, no bumping). Prints, per proxy, the median CPU-seconds
// (user + system of the proxy process, from /proc/PID/stat) per GiB relayed and the median MB/s.
// RELAY_STRACE=1 (needs strace) adds one more download per proxy under `strace -c -f` and
// prints the syscall counts per GiB and the average bytes per read call. Loopback only.
// `npm run bench:relay` builds dist/ and runs it.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readConnectResponse } from './connect-response.mjs'
import { freePort, startProcess, stopProcess, waitForPort } from './compare/processes.mjs'
import { startNginx } from './compare/origin.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

const MiB = 1024 * 1024
const ORIGIN_MIB = 64
const totalMiB = Number(process.env.RELAY_MIB ?? 256)
const rounds = Number(process.env.RELAY_ROUNDS ?? 5)
const withStrace = process.env.RELAY_STRACE === '1'
const undiciClient = process.env.RELAY_CLIENT === 'undici'
const clientSeconds = Number(process.env.RELAY_SECONDS ?? 4)
const here = (file) => fileURLToPath(new URL(file, import.meta.url))
const SQUID = ['/usr/sbin/squid', '/usr/bin/squid'].find((path) => existsSync(path))
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((path) => existsSync(path))
const STRACE = ['/usr/bin/strace', '/bin/strace'].find((path) => existsSync(path))

/** User and system CPU seconds used so far by `pid` (USER_HZ = 100). */
function cpuTimes (pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }
}

/** CPU used by `pid` since `before` (from cpuTimes). */
function cpuSince (pid, before) {
  const now = cpuTimes(pid)
  return { user: now.user - before.user, system: now.system - before.system }
}

/** Starts a Node script that prints its port (or a JSON line with ports) on its first line. */
function startNode (script, args = [], env = {}) {
  const started = startProcess(process.execPath, [here(script), ...args], { env: { ...process.env, ...env } })
  const firstLine = new Promise((resolve, reject) => {
    let text = ''
    started.child.stdout.on('data', (chunk) => {
      text += chunk.toString()
      const newline = text.indexOf('\n')
      if (newline !== -1) resolve(text.slice(0, newline))
    })
    started.child.once('exit', (code) => reject(new Error(`${script} exited (${code}): ${started.output()}`)))
  })
  return { started, firstLine }
}

async function startSquid (directory) {
  const port = await freePort()
  const config = join(directory, 'squid.conf')
  writeFileSync(config, `http_port 127.0.0.1:${port}
http_access allow all
cache deny all
cache_mem 8 MB
access_log none
cache_log ${directory}/cache.log
cache_store_log none
pid_filename ${directory}/squid.pid
coredump_dir ${directory}
pinger_enable off
shutdown_lifetime 0 seconds
`)
  // A service name of its own: Squid names its /dev/shm segments after it (see bench/compare/peers.mjs).
  const started = startProcess(SQUID, ['-n', `ffprelay${process.pid}p${port}`, '-N', '-f', config])
  await waitForPort('127.0.0.1', port, { ...started, name: 'squid' })
  return { port, started }
}

const PEERS = {
  ours: async () => {
    const { started, firstLine } = startNode('./proxy-server.mjs', [], { NODE_ENV: 'production' })
    return { port: Number(await firstLine), started }
  },
  bin: async (directory) => {
    const port = await freePort()
    const config = join(directory, 'bin.json')
    writeFileSync(config, JSON.stringify({
      listen: [{ host: '127.0.0.1', port }],
      destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.0/8'] },
      log: { level: 'warn' }
    }))
    const started = startProcess(process.execPath, [...SHIPPED_NODE_ARGS, here('../dist/lib/cli/main.js'), '--config', config], { env: { ...process.env, NODE_ENV: 'production' } })
    await waitForPort('127.0.0.1', port, { ...started, name: 'bin' })
    return { port, started }
  },
  floor: async () => {
    const { started, firstLine } = startNode('./relay-floor.mjs')
    return { port: Number(await firstLine), started }
  },
  squid: startSquid
}
// RELAY_EXTRA=name=script.mjs,...: more Node relays to compare (experiments), each printing its port.
for (const entry of (process.env.RELAY_EXTRA ?? '').split(',').filter(Boolean)) {
  const [name, script, ...env] = entry.split('=')
  PEERS[name] = async () => {
    const { started, firstLine } = startNode(script, [], env.length === 2 ? { [env[0]]: env[1] } : {})
    return { port: Number(await firstLine), started }
  }
}

/** One tunnel: CONNECT to the blast port, read until the destination's end; resolves with the bytes. */
async function downloadOnce (proxyPort, destPort) {
  const socket = connect(proxyPort, '127.0.0.1', () => socket.write(`CONNECT 127.0.0.1:${destPort} HTTP/1.1\r\nHost: 127.0.0.1:${destPort}\r\n\r\n`))
  const { status } = await readConnectResponse(socket)
  if (status !== 200) throw new Error(`CONNECT answered ${status}`)
  return new Promise((resolve, reject) => {
    let bytes = 0
    socket.on('data', (chunk) => { bytes += chunk.length })
    socket.once('end', () => { socket.end(); resolve(bytes) })
    socket.once('error', reject)
    socket.resume()
  })
}

/** Starts nginx (bench/compare/origin.mjs: plain HTTP, /big: 64 MiB, sendfile) if installed, else bench/origin.mjs; resolves with its port. */
let httpOrigin
async function startHttpOrigin (directory) {
  if (NGINX === undefined) {
    const node = startNode('./origin.mjs')
    httpOrigin = node.started
    return Number(await node.firstLine)
  }
  const nginx = await startNginx(NGINX, directory)
  httpOrigin = nginx.processes[0]
  return nginx.httpPort
}

/** RELAY_CLIENT=undici: bench/load.mjs download-tunnel for RELAY_SECONDS; resolves with { bytes, cpu, seconds }. */
async function measureUndici (peer, originPort) {
  const cpuBefore = cpuTimes(peer.started.child.pid)
  const { child } = startProcess(process.execPath, [here('./load.mjs'), 'download-tunnel', String(originPort), String(peer.port), String(clientSeconds), '1'])
  let text = ''
  child.stdout.on('data', (chunk) => { text += chunk })
  await new Promise((resolve) => child.once('exit', resolve))
  const cpu = cpuSince(peer.started.child.pid, cpuBefore)
  const { mbPerSec, errors } = JSON.parse(text)
  if (errors > 0) throw new Error(`${peer.name}: ${errors} errors`)
  return { bytes: mbPerSec * MiB * clientSeconds, cpu, seconds: clientSeconds }
}

/** Downloads `totalMiB` through the proxy; resolves with { bytes, cpu, seconds }. */
async function measure (peer, destPort) {
  if (undiciClient) return measureUndici(peer, destPort)
  const cpuBefore = cpuTimes(peer.started.child.pid)
  const start = process.hrtime.bigint()
  let bytes = 0
  for (let done = 0; done < totalMiB; done += ORIGIN_MIB) bytes += await downloadOnce(peer.port, destPort)
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  const cpu = cpuSince(peer.started.child.pid, cpuBefore)
  if (bytes !== Math.ceil(totalMiB / ORIGIN_MIB) * ORIGIN_MIB * MiB) throw new Error(`${peer.name}: received ${bytes} bytes`)
  return { bytes, cpu, seconds }
}

/** One download under `strace -c -f -p`, resolving with the syscall table: name → calls. */
async function traced (peer, destPort, directory) {
  const output = join(directory, `strace-${peer.name}.txt`)
  const strace = spawn(STRACE, ['-c', '-f', '-o', output, '-p', String(peer.started.child.pid)], { stdio: ['ignore', 'ignore', 'pipe'] })
  // strace says "Process N attached" on stderr once it traces the process.
  await new Promise((resolve, reject) => {
    strace.stderr.on('data', (chunk) => { if (chunk.toString().includes('attached')) resolve() })
    strace.once('exit', (code) => reject(new Error(`strace exited (${code})`)))
  })
  const { bytes } = await measure(peer, destPort)
  const exited = new Promise((resolve) => strace.once('exit', resolve))
  strace.kill('SIGINT')
  await exited
  const calls = {}
  for (const line of readFileSync(output, 'utf8').split('\n')) {
    const fields = line.trim().split(/\s+/)
    const name = fields.at(-1)
    if (fields.length >= 5 && /^\d/.test(fields[0]) && name !== 'total') calls[name] = Number(fields[3])
  }
  return { bytes, calls }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

const directory = mkdtempSync(join(tmpdir(), 'relay-cpu-'))
const requested = (process.env.RELAY_PEERS ?? 'ours,floor,squid').split(',').filter((name) => name !== 'squid' || SQUID !== undefined)
const origin = startNode('./tcp-origin.mjs')
const { blast: blastPort } = JSON.parse(await origin.firstLine)
const blast = undiciClient ? await startHttpOrigin(directory) : blastPort
const peers = []
for (const name of requested) peers.push({ name, ...await PEERS[name](directory), runs: [] })

for (const peer of peers) await measure(peer, blast) // warm-up
for (let round = 0; round < rounds; round++) {
  // Each round starts with the next proxy, so no proxy always runs first.
  for (let i = 0; i < peers.length; i++) {
    const peer = peers[(round + i) % peers.length]
    peer.runs.push(await measure(peer, blast))
  }
}
const GiB = 1024 * MiB
console.log(undiciClient ? `bench/load.mjs (undici) downloading /big from ${NGINX === undefined ? 'bench/origin.mjs' : 'nginx'} for ${clientSeconds} s per run` : `${totalMiB} MiB per run from bench/tcp-origin.mjs through 1 tunnel at a time`)
console.log(`${rounds} rounds, alternating; load average before: ${readFileSync('/proc/loadavg', 'utf8').trim()}`)
console.log('| proxy | CPU-s per GiB (median) | user | system | each round | MB/s (median) |')
console.log('|---|---|---|---|---|---|')
for (const peer of peers) {
  const per = (pick) => peer.runs.map(({ cpu, bytes }) => pick(cpu) / (bytes / GiB))
  const perGiB = per(({ user, system }) => user + system)
  const rates = peer.runs.map(({ bytes, seconds }) => bytes / 1e6 / seconds)
  console.log(`| ${peer.name} | ${median(perGiB).toFixed(2)} | ${median(per(({ user }) => user)).toFixed(2)} | ${median(per(({ system }) => system)).toFixed(2)} | ${perGiB.map((v) => v.toFixed(2)).join(' / ')} | ${median(rates).toFixed(0)} |`)
}
if (withStrace && STRACE !== undefined) {
  console.log('\nsyscalls per GiB relayed (one run under strace -c -f; the counts, not the time, matter)')
  for (const peer of peers) {
    const { bytes, calls } = await traced(peer, blast, directory)
    const perGiB = (n) => Math.round((n ?? 0) / (bytes / GiB))
    const reads = (calls.read ?? 0) + (calls.recvfrom ?? 0) + (calls.recvmsg ?? 0) + (calls.readv ?? 0)
    const top = Object.entries(calls).sort((a, b) => b[1] - a[1]).slice(0, 8).map(([name, n]) => `${name} ${perGiB(n)}`).join(', ')
    console.log(`- ${peer.name}: ${top}; ${Math.round(bytes / reads / 1024)} KiB relayed per read call`)
  }
}
for (const peer of peers) await stopProcess(peer.started)
await stopProcess(origin.started)
if (httpOrigin !== undefined) await stopProcess(httpOrigin)
rmSync(directory, { recursive: true, force: true })
