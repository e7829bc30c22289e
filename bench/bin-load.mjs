// What the bin benchmarks share: the bin started on a configuration, the CPU a process has used,
// and the two clients that load it (undici, a Pool of keep-alive connections; hey, Go's net/http).
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Pool } from 'undici'
import { locate } from './compare/tools.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

/** Connections of both clients. */
export const CONNECTIONS = 32

/** The path of hey, or undefined when it is not installed. */
export const hey = locate(['hey'])

/** User time + system time of `pid` so far, in microseconds (/proc/PID/stat). */
export function cpuMicros (pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

/**
 * Starts `<tree>/dist/lib/cli/main.js` (NODE_ENV=production, with the Node options `npm start`
 * passes) on `config(port)`, written in `dir`, and resolves once it answers; the caller kills it.
 */
export async function startBin (tree, dir, config) {
  // Below the ephemeral range (32768 and up), where a client connection may hold the port.
  const port = 20_000 + Math.floor(Math.random() * 12_000)
  const file = join(dir, `proxy-${port}.json`)
  writeFileSync(file, JSON.stringify(config(port)))
  const bin = spawn(process.execPath, [...SHIPPED_NODE_ARGS, join(tree, 'dist', 'lib', 'cli', 'main.js'), '--config', file], { env: { ...process.env, NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'inherit'] })
  bin.stdout.resume()
  // Listening once a plain request gets the proxy's 407.
  for (let tries = 0; tries < 100; tries++) {
    const answered = await fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false)
    if (answered) return { bin, port }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`the bin of ${tree} did not start`)
}

/** undici: `CONNECTIONS` keep-alive connections sending absolute-form GETs for `seconds`; resolves the 200s. */
export async function undiciLoad (port, target, credentials, seconds) {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONNECTIONS })
  const authorization = `Basic ${Buffer.from(credentials).toString('base64')}`
  const { host } = new URL(target)
  let answered = 0
  const until = Date.now() + seconds * 1000
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (Date.now() < until) {
      const response = await pool.request({ path: target, method: 'GET', headers: { host, 'proxy-authorization': authorization } })
      await response.body.arrayBuffer()
      if (response.statusCode === 200) answered++
    }
  }))
  await pool.close()
  return answered
}

/** hey with `CONNECTIONS` connections for `seconds`; resolves the 200s. */
export function heyLoad (port, target, credentials, seconds) {
  const output = execFileSync(hey, ['-z', `${seconds}s`, '-c', String(CONNECTIONS), '-x', `http://${credentials}@127.0.0.1:${port}`, target], { encoding: 'utf8', maxBuffer: 1 << 24 })
  return Number(/\[200\]\s+(\d+) responses/.exec(output)?.[1] ?? 0)
}

/** The median of `values`. */
export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
