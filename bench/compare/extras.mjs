// The measurements beside the load scenarios: SSE first byte, idle tunnels (memory per tunnel),
// HTTP/2 CONNECT tunnels and leaves for new hosts. Each runs its client in a child process.
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { memoryMiB } from './processes.mjs'

const here = (file) => fileURLToPath(new URL(file, import.meta.url))

/** Runs `node file json` and resolves with the JSON it prints. */
export function runJsonChild (file, argument, timeoutMs = 300_000) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [file, JSON.stringify(argument)], { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error !== null) return reject(new Error(`${file}: ${error.message}\n${stderr}`))
      resolve(JSON.parse(stdout))
    })
  })
}

/** SSE first-byte latency, direct (`proxyPort` undefined) or through a proxy's http:// forwarding. */
export function sseFirstByte (ssePort, proxyPort, samples) {
  return runJsonChild(here('./sse-client.mjs'), { originPort: ssePort, proxyPort, samples })
}

/**
 * Opens `count` idle tunnels through the proxy on `proxyPort` (process `pid`): a tenth first,
 * then the rest. The cost per tunnel is the growth of the proxy's resident memory over the rest,
 * divided by their number: { opened, errors, firstError, seconds, rssBefore, rssWith, kibPerTunnel }.
 */
export async function idleTunnels ({ pid, proxyPort, host, port, count, ca, timeoutMs = 300_000 }) {
  const first = Math.max(1, Math.floor(count / 10))
  const child = spawn(process.execPath, [here('./idle-client.mjs'), JSON.stringify({ proxyPort, host, port, first, count, ca })], { stdio: ['pipe', 'pipe', 'inherit'] })
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const exited = once(child, 'exit')
  const nextLine = async () => {
    const line = await Promise.race([lines.next(), exited.then(([code]) => { throw new Error(`idle client exited (${code}) before its tunnels were open`) })])
    if (line.done) throw new Error('idle client ended its output early')
    return JSON.parse(line.value)
  }
  try {
    const early = await nextLine()
    const before = memoryMiB(pid).rss
    child.stdin.write('go\n')
    const all = await nextLine()
    const rssWith = memoryMiB(pid).rss
    const later = all.opened - early.opened
    return { ...all, seconds: early.seconds + all.seconds, rssBefore: before, rssWith, kibPerTunnel: later <= 0 ? NaN : (rssWith - before) * 1024 / later }
  } finally {
    clearTimeout(timer)
    child.stdin.end()
    if (child.exitCode === null && child.signalCode === null) await exited
  }
}

/** Intercepted handshakes to `count` new hosts through ours (which must intercept them). */
export function mintLeaves (proxyPort, port, count, ca) {
  return runJsonChild(here('./leaves-client.mjs'), { proxyPort, port, count, ca })
}

/** bench/tunnel-load.mjs with `spec` (HTTP/1.1 or HTTP/2 CONNECT through a TLS listener). */
export function tunnelLoad (spec, duration) {
  return runJsonChild(here('../tunnel-load.mjs'), { duration, ...spec })
}
