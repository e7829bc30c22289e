// Child processes of the comparison harness: start, wait until a port accepts connections,
// stop, and read CPU time and memory of a process and its descendants from /proc.
import { spawn } from 'node:child_process'
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'

const started = new Set()
process.once('exit', () => { for (const child of started) if (child.exitCode === null) child.kill('SIGKILL') })

/**
 * A variant's options as the A/B harnesses take them, space-separated: Node options (the tokens
 * that start with `-`) and environment entries (`NAME=value`, glibc's `MALLOC_` settings say).
 */
export function nodeOptionsAndEnv (text) {
  const tokens = text.split(/\s+/).filter(Boolean)
  const env = Object.fromEntries(tokens.filter((token) => !token.startsWith('-')).map((token) => token.split(/=(.*)/s).slice(0, 2)))
  return { nodeArgs: tokens.filter((token) => token.startsWith('-')), env }
}

/**
 * Spawns `command`, keeping the last 4000 characters of its output for error messages. With
 * `stdoutPath` (a file, or /dev/null) its stdout goes there instead, as a service's log would,
 * and only stderr is kept.
 */
export function startProcess (command, args, { stdoutPath, ...options } = {}) {
  const fd = stdoutPath === undefined ? undefined : openSync(stdoutPath, 'a')
  let child
  try {
    child = spawn(command, args, { stdio: ['ignore', fd ?? 'pipe', 'pipe'], ...options })
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
  let output = ''
  const keep = (chunk) => { output = (output + chunk.toString()).slice(-4000) }
  child.stdout?.on('data', keep)
  child.stderr.on('data', keep)
  started.add(child)
  child.once('exit', () => started.delete(child))
  return { child, output: () => output }
}

/** Resolves once `host:port` accepts a TCP connection; rejects if `child` exits first or after `timeoutMs`. */
export async function waitForPort (host, port, { child, output, name }, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      // 'exit' can come before the last output: wait for the pipes to close to report it.
      if (child.stdout?.readableEnded === false || child.stderr?.readableEnded === false) {
        await Promise.race([new Promise((resolve) => child.once('close', resolve)), delay(2000)])
      }
      const lastLine = output().trim().split('\n').at(-1) ?? ''
      throw new Error(`${name} exited (${child.exitCode}) before listening: ${lastLine}\n${output()}`)
    }
    const ok = await new Promise((resolve) => {
      const socket = connect(port, host, () => { socket.destroy(); resolve(true) })
      socket.once('error', () => resolve(false))
    })
    if (ok) return
    await delay(100)
  }
  throw new Error(`${name} did not listen on ${host}:${port} within ${timeoutMs} ms:\n${output()}`)
}

/**
 * Starts `node ...nodeArgs script ...args` for a script that prints the port it listens on as its
 * first line of output (bench/floor-*.mjs, bench/proxy-server.mjs); resolves with the started
 * process and port.
 */
export async function startPortPrinter (script, args = [], name = script, timeoutMs = 30_000, nodeArgs = []) {
  const started = startProcess(process.execPath, [...nodeArgs, script, ...args])
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} printed no port within ${timeoutMs} ms: ${started.output()}`)), timeoutMs)
    started.child.stdout.once('data', (chunk) => { clearTimeout(timer); resolve(Number(String(chunk).trim().split('\n')[0])) })
    started.child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`${name} exited (${code}) before listening: ${started.output()}`)) })
  })
  return { started, port, pid: started.child.pid }
}

/** Stops a started process (SIGTERM, then SIGKILL after 5 s) and resolves when it has exited. */
export async function stopProcess ({ child }) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(timer)
}

/** A free TCP port on `host` (closed again at once; peers that cannot listen on port 0 get it). */
export function freePort (host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, host, () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

const CLOCK_TICKS = 100 // USER_HZ on Linux

function readStat (pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { ppid: Number(fields[1]), cpuTicks: Number(fields[11]) + Number(fields[12]) }
  } catch {
    return undefined
  }
}

/** `pid` and every live descendant (Squid's certificate helpers, for instance). */
export function processTree (pid) {
  const parents = new Map()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readStat(entry)
    if (stat !== undefined) parents.set(Number(entry), stat.ppid)
  }
  const tree = [pid]
  for (let i = 0; i < tree.length; i++) {
    for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child)
  }
  return tree
}

/** User + system CPU seconds used so far by `pid` and its live descendants. */
export function cpuSeconds (pid) {
  let ticks = 0
  for (const member of processTree(pid)) ticks += readStat(member)?.cpuTicks ?? 0
  return ticks / CLOCK_TICKS
}

/**
 * User + system CPU seconds of this process's children that have exited and been waited for
 * (`cutime` + `cstime` of /proc/self/stat). Read before and after a client run (hey, bench/load.mjs,
 * the CONNECT client: each a child that exits at the end of its run), the difference is that
 * client's CPU, as long as no other child ended in between.
 */
export function endedChildrenCpuSeconds () {
  const text = readFileSync('/proc/self/stat', 'utf8')
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS
}

/** A `/proc/<pid>/status` field in KiB (0 when the process or field is gone). */
export function statusKiB (pid, field) {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`))
    return line === undefined ? 0 : Number(line.split(/\s+/)[1])
  } catch {
    return 0
  }
}

/** Resident memory (MiB) of `pid` and its live descendants: `VmRSS` now, and the sum of their `VmHWM` peaks. */
export function memoryMiB (pid) {
  let rss = 0
  let peak = 0
  for (const member of processTree(pid)) {
    rss += statusKiB(member, 'VmRSS')
    peak += statusKiB(member, 'VmHWM')
  }
  return { rss: rss / 1024, peak: peak / 1024 }
}

/** The kernel's count of TCP connections accepted so far, machine-wide (`Tcp: PassiveOpens` in /proc/net/snmp). */
export function tcpPassiveOpens () {
  const lines = readFileSync('/proc/net/snmp', 'utf8').split('\n').filter((line) => line.startsWith('Tcp:'))
  const names = lines[0].split(/\s+/)
  const values = lines[1].split(/\s+/)
  return Number(values[names.indexOf('PassiveOpens')])
}
