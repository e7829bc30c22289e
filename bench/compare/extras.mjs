// The measurements beside the load scenarios: SSE first byte, idle tunnels (memory per tunnel),
// HTTP/2 CONNECT tunnels and leaves for new hosts. Each runs its client in a child process.
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
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
 * Opens `count` idle tunnels through the proxy on `proxyPort` (process `pid`) and measures its
 * resident memory before and with them open: { opened, errors, firstError, seconds, kibPerTunnel }.
 */
export async function idleTunnels ({ pid, proxyPort, host, port, count, ca, timeoutMs = 300_000 }) {
  const before = memoryMiB(pid).rss
  const child = spawn(process.execPath, [here('./idle-client.mjs'), JSON.stringify({ proxyPort, host, port, count, ca })], { stdio: ['pipe', 'pipe', 'inherit'] })
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  try {
    const [line] = await Promise.race([
      once(child.stdout, 'data'),
      once(child, 'exit').then(([code]) => { throw new Error(`idle client exited (${code}) before every tunnel was open`) })
    ])
    const opened = JSON.parse(line.toString())
    const during = memoryMiB(pid).rss
    return { ...opened, rssBefore: before, rssWith: during, kibPerTunnel: opened.opened === 0 ? NaN : (during - before) * 1024 / opened.opened }
  } finally {
    clearTimeout(timer)
    const exited = child.exitCode === null ? once(child, 'exit') : Promise.resolve()
    child.stdin.end()
    await exited
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
