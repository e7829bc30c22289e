// A/B of the plugin built in two work trees: `node bench/ab.mjs <before-tree> [after-tree]`
// (after-tree defaults to this one; each must have run `npm run build`). Starts each tree's
// bench/proxy-server.mjs and alternates rounds between them, the order swapped every round, and
// prints the median proxy CPU (user + system from /proc/<pid>/stat) per request for each mode:
// `http-proxy` and `tunnel-proxy` are bench/load.mjs runs (32 connections) against
// bench/origin.mjs; `connect` is 32 clients opening a connection, sending CONNECT to a local TCP
// listener, reading the 200 and closing. Knobs: AB_MODES (http-proxy,tunnel-proxy,connect),
// AB_ROUNDS (6), AB_SECONDS (4).
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const [beforeTree, afterTree = join(here, '..')] = process.argv.slice(2)
if (beforeTree === undefined) {
  console.error('usage: node bench/ab.mjs <before-tree> [after-tree]')
  process.exit(2)
}
const trees = { before: resolve(beforeTree), after: resolve(afterTree) }
const modes = (process.env.AB_MODES ?? 'http-proxy,tunnel-proxy,connect').split(',')
const rounds = Number(process.env.AB_ROUNDS ?? 6)
const seconds = Number(process.env.AB_SECONDS ?? 4)

/** Starts a Node script that prints its port on its first line. */
function start (script) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] })
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)))
    child.stdout.once('data', (line) => resolve({ child, port: Number(String(line).trim()) }))
  })
}

/** User + system CPU of `pid` so far, in µs (the kernel counts in 10 ms ticks). */
function cpuMicroseconds (pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

/** Opens, answers and closes CONNECTs to `target` through `port` for `seconds`; resolves with how many got 200. */
async function connects (port, target) {
  let answered = 0
  const end = Date.now() + seconds * 1000
  const one = () => new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`))
    socket.on('error', () => {})
    socket.once('data', (chunk) => {
      if (String(chunk).startsWith('HTTP/1.1 200')) answered++
      socket.destroy()
    })
    socket.on('close', resolve)
  })
  await Promise.all(Array.from({ length: 32 }, async () => { while (Date.now() < end) await one() }))
  return answered
}

const origin = await start(join(here, 'origin.mjs'))
const sink = createServer((socket) => { socket.on('error', () => {}); socket.resume() })
await new Promise((resolve) => sink.listen(0, '127.0.0.1', resolve))
const connectTarget = `127.0.0.1:${sink.address().port}`
const proxies = {}
for (const [name, tree] of Object.entries(trees)) proxies[name] = await start(join(tree, 'bench', 'proxy-server.mjs'))
const results = {}
try {
  for (let round = 0; round < rounds; round++) {
    for (const mode of modes) {
      for (const name of round % 2 === 0 ? ['before', 'after'] : ['after', 'before']) {
        const { child, port } = proxies[name]
        const cpuBefore = cpuMicroseconds(child.pid)
        const requests = mode === 'connect'
          ? await connects(port, connectTarget)
          : JSON.parse(execFileSync(process.execPath, [join(here, 'load.mjs'), mode, String(origin.port), String(port), String(seconds), '32'], { encoding: 'utf8' })).requests
        ;((results[mode] ??= {})[name] ??= []).push((cpuMicroseconds(child.pid) - cpuBefore) / requests)
      }
    }
  }
} finally {
  origin.child.kill()
  for (const { child } of Object.values(proxies)) child.kill()
  sink.close()
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
console.log(`before: ${trees.before}\nafter: ${trees.after}\n${rounds} rounds of ${seconds} s, proxy CPU µs per request (per answered CONNECT for connect): median [each round]`)
for (const [mode, byTree] of Object.entries(results)) {
  for (const [name, values] of Object.entries(byTree)) {
    console.log(`${mode.padEnd(13)} ${name.padEnd(6)} ${median(values).toFixed(1).padStart(6)}  [${values.map((value) => value.toFixed(0)).join(', ')}]`)
  }
}
process.exit(0)
