// Where a proxy's CPU goes, per request: `perf record` of one path at a time under hey (32
// keep-alive connections, http:// or intercepted requests), or under the per-request suite's
// CONNECT client (32 clients each sending a CONNECT, reading the answer and closing), after a
// 2 s warm-up, each sample read back with the JIT's symbol map
// (`--perf-basic-prof-only-functions`) and given to its owner: the nearest JavaScript frame's
// file (ours by file under dist/lib, a package by name, Node's own modules by name; "no JS
// frame" for libuv, the HTTP parser's C++ and the like), in the kernel or in user space by
// where the sample landed, the main thread apart from V8's and libuv's other threads (those by
// thread name: V8Worker, libuv-worker, ...). A V8 CPU profile (`--cpu-prof`) counts wall time,
// so a write that wakes the client shows as a long `writev`; perf counts CPU time only. The CPU
// per request is /proc's, as the suites read it; the split is perf's. perf itself costs CPU
// (more per request the deeper and slower the path), so compare shares, and totals only with
// the suites. Paths as in bench/load-paths.mjs.
//
//   npm run build && node bench/cpu-owners.mjs . bench/floor-fastify-proxy.mjs
//   OWNERS_MODE=intercept OWNERS_FUNCTIONS='^ours' node bench/cpu-owners.mjs .
//   OWNERS_MODE=connect node bench/cpu-owners.mjs bench/proxy-server.mjs bench/floor-fastify-connect.mjs
//
// Knobs: OWNERS_MODE (http, intercept, or connect: per answered CONNECT), OWNERS_CLIENT (curl:
// `curl --parallel` over 32 connections, bench/compare/curl.mjs, in hey's place), OWNERS_SECONDS (5),
// OWNERS_TOP (owners listed, 16), OWNERS_FUNCTIONS (a pattern: the functions of the owners it
// matches are listed too), OWNERS_NODE_ARGS (more Node options, space-separated:
// `--no-turbo-inlining` gives inlined functions their own samples, at a cost that changes the
// shares). Needs perf (apt-get install linux-perf), and hey unless curl or the CONNECT client
// sends the load; nginx is the origin when installed.
import { spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { connectLoad } from './compare/connect-client.mjs'
import { runCurl } from './compare/curl.mjs'
import { runHey } from './compare/hey.mjs'
import { PLAIN_HOST } from './compare/origin.mjs'
import { basicAuthorization } from './compare/peers.mjs'
import { cpuSeconds, stopProcess } from './compare/processes.mjs'
import { loadBench, pathStarter } from './load-paths.mjs'
import { locate } from './compare/tools.mjs'
import { SHIPPED_NODE_ARGS } from './shipped-node-args.mjs'

const paths = process.argv.slice(2)
if (paths.length === 0) throw new Error('usage: node bench/cpu-owners.mjs <tree[@variant] | bench/floor-*.mjs> ...')
const MODE = process.env.OWNERS_MODE ?? 'http'
if (!['http', 'intercept', 'connect'].includes(MODE)) throw new Error(`OWNERS_MODE: "${MODE}" is not http, intercept or connect`)
const SECONDS = Number(process.env.OWNERS_SECONDS ?? 5)
const TOP = Number(process.env.OWNERS_TOP ?? 16)
const FUNCTIONS = process.env.OWNERS_FUNCTIONS === undefined ? undefined : new RegExp(process.env.OWNERS_FUNCTIONS)
const EXTRA_NODE_ARGS = (process.env.OWNERS_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '')
const SAMPLES_PER_SECOND = 2999
const perf = locate(['perf'])
if (perf === undefined) throw new Error('perf is not installed (apt-get install linux-perf)')
const curl = process.env.OWNERS_CLIENT === 'curl' ? locate(['curl']) : undefined
if (process.env.OWNERS_CLIENT === 'curl' && curl === undefined) throw new Error('curl is not installed (apt-get install curl)')
// hey is the client only of requests that curl does not send (CONNECTs have a client of their own).
const heySendsLoad = MODE !== 'connect' && curl === undefined
const hey = heySendsLoad ? locate(['hey']) : undefined
if (heySendsLoad && hey === undefined) throw new Error('hey is not installed (apt-get install hey)')
const { directory, destinationCa, operatorCa, origin, url } = await loadBench('cpu-owners', MODE)
/** Puts `seconds` of load on the proxy at `port` and resolves with the requests (or CONNECTs) answered. */
async function load (port, seconds, user) {
  if (MODE !== 'connect' && curl !== undefined) {
    // The intercepting floor's leaf, like the bins', is signed by the operator CA.
    const caPath = MODE === 'http' ? undefined : operatorCa.certPath
    const { requests, errors, firstError } = await runCurl(curl, url, port, seconds, 32, { proxyUser: user, caPath, http1: true })
    if (errors > 0) throw new Error(`curl: ${errors} errors, the first: ${firstError}`)
    return requests
  }
  if (MODE !== 'connect') return (await runHey(hey, url, port, seconds, 32, true, user)).requests
  const authorization = user === undefined ? undefined : basicAuthorization(user)
  const { answered, errors, firstError } = await connectLoad({ proxyPort: port, target: `${PLAIN_HOST}:${origin.httpPort}`, seconds, parallel: 32, authorization })
  if (errors > 0) throw new Error(`CONNECT load: ${errors} errors, the first: ${firstError}`)
  return answered
}
const start = pathStarter({ directory, operatorCa, destinationCa, nodeArgs: [...SHIPPED_NODE_ARGS, ...EXTRA_NODE_ARGS, '--perf-basic-prof-only-functions'] })

/** The owner of one stack frame of `perf script`'s output, or null for a frame of native code. */
function ownerOf (frame) {
  const ours = /\/dist\/lib\/([^:]+):/.exec(frame)
  if (ours !== null) return `ours: ${ours[1]}`
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(frame)
  if (pkg !== null) return pkg[1]
  const core = /JS:\S* (node:[^:]+)/.exec(frame)
  if (core !== null) return core[1]
  return frame.includes('JS:') ? 'other JavaScript' : null
}

/** Reads `perf script` of `file` and counts samples per owner, kernel and user apart. */
async function ownersOf (file) {
  const script = spawn(perf, ['script', '-i', file, '-F', 'comm,pid,tid,ip,sym,dso'], { stdio: ['ignore', 'pipe', 'ignore'] })
  const owners = new Map()
  const functions = new Map()
  const threads = { mainKernel: 0, mainUser: 0, other: 0, otherByName: new Map() }
  let sample = null
  const count = () => {
    if (sample === null) return
    if (!sample.main) {
      threads.other++
      threads.otherByName.set(sample.name, (threads.otherByName.get(sample.name) ?? 0) + 1)
      return
    }
    const leaf = sample.frames[0] ?? ''
    const where = leaf.includes('[kernel') ? 'kernel' : 'user'
    threads[where === 'kernel' ? 'mainKernel' : 'mainUser']++
    let owner = null
    let frame = null
    for (const candidate of sample.frames) {
      owner = ownerOf(candidate)
      if (owner !== null) {
        frame = candidate
        break
      }
    }
    if (owner === null) owner = sample.frames.some((f) => f.includes('epoll_pwait')) ? 'waiting in epoll' : 'no JS frame'
    const counts = owners.get(owner) ?? { kernel: 0, user: 0 }
    counts[where]++
    owners.set(owner, counts)
    if (FUNCTIONS?.test(owner) && frame !== null) {
      const name = frame.replace(/^[0-9a-f]+ JS:[*^~]?/, '').replace(/\+0x[0-9a-f]+ \(.*$/, '').replace(/\S*\/(dist|node_modules)\//, '$1/')
      functions.set(name, (functions.get(name) ?? 0) + 1)
    }
  }
  for await (const line of createInterface({ input: script.stdout })) {
    if (/^\S/.test(line)) {
      count()
      const [, name, pid, tid = pid] = /^(\S+)\s+(\d+)(?:\/(\d+))?/.exec(line) ?? []
      sample = { main: pid === tid, name, frames: [] }
    } else if (line.trim() !== '' && sample !== null) {
      sample.frames.push(line.trim())
    }
  }
  count()
  return { owners, functions, threads }
}

const micros = (samples, requests) => (samples * 1e6 / SAMPLES_PER_SECOND / requests).toFixed(1).padStart(6)
const unit = { http: 'http:// request', intercept: 'intercepted request', connect: 'answered CONNECT' }[MODE]
console.log(`CPU per ${unit} by owner (${MODE === 'connect' ? 'CONNECT client' : curl === undefined ? 'hey' : 'curl --parallel'}, 32 connections, ${SECONDS} s recorded at ${SAMPLES_PER_SECOND} Hz), Node ${process.version}`)
for (const path of paths) {
  const { started, port, user } = await start(path)
  const { pid } = started.child
  await load(port, 2, user)
  const file = join(directory, `perf-${pid}.data`)
  const recorder = spawn(perf, ['record', '-F', String(SAMPLES_PER_SECOND), '-g', '-o', file, '-p', String(pid)], { stdio: 'ignore' })
  await sleep(500)
  const before = cpuSeconds(pid)
  const requests = await load(port, SECONDS, user)
  const cpu = cpuSeconds(pid) - before
  recorder.kill('SIGINT')
  await new Promise((resolve) => recorder.once('exit', resolve))
  const { owners, functions, threads } = await ownersOf(file)
  await stopProcess(started)
  rmSync(`/tmp/perf-${pid}.map`, { force: true })
  console.log(`\n${path}: ${requests} requests, ${(cpu * 1e6 / requests).toFixed(1)} µs CPU per ${MODE === 'connect' ? 'CONNECT' : 'request'} (/proc); perf: main thread ${micros(threads.mainKernel, requests).trim()} kernel + ${micros(threads.mainUser, requests).trim()} user, other threads ${micros(threads.other, requests).trim()} (${[...threads.otherByName].sort((a, b) => b[1] - a[1]).map(([name, samples]) => `${name} ${micros(samples, requests).trim()}`).join(', ')})`)
  console.log(`    user  kernel  (µs per ${MODE === 'connect' ? 'CONNECT' : 'request'})`)
  for (const [owner, c] of [...owners].sort((a, b) => (b[1].user + b[1].kernel) - (a[1].user + a[1].kernel)).slice(0, TOP)) {
    console.log(`  ${micros(c.user, requests)}  ${micros(c.kernel, requests)}  ${owner}`)
  }
  if (FUNCTIONS !== undefined) {
    console.log(`  functions of the owners matching ${FUNCTIONS}:`)
    for (const [name, count] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${micros(count, requests)}  ${name}`)
  }
}
for (const child of origin.processes) await stopProcess(child)
rmSync(directory, { recursive: true, force: true })
