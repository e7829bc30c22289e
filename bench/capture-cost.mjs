// What traffic capture (the `capture` option: every request recorded as a HAR entry, written to a
// file off the request path) costs per intercepted request: the bin (dist/lib/cli/main.js) with
// one user (Basic auth), loopback destinations and `interception` of the origin's address, and
// with or without `"capture": { "file", "maxBodyBytes" }`. Requests go inside CONNECT tunnels the
// proxy intercepts (TLS to the client with a leaf from the operator CA, TLS to a local HTTPS
// origin verified against the destination CA), keep-alive, 32 connections, from two clients:
// undici (a ProxyAgent in this process, `requestTls: { ca }`) and hey (Go's net/http, `-x`, which
// does not verify certificates). Two responses: 13 bytes of text/plain (`/small`) and 64 KiB of
// application/json (`/64k`), each through
//   - capture off,
//   - capture on, heads only (`maxBodyBytes: 0`),
//   - capture on with bodies (`maxBodyBytes: 65536`, the default: a 64 KiB body is kept whole).
// Each run starts a fresh bin, warms it up (BENCH_WARMUP_SECONDS, 1 s, the same load), waits for
// the proxy to go quiet (its CPU and the HAR file still), then loads it for BENCH_SECONDS and
// waits for it to go quiet again, so the CPU counted includes the entries built and written after
// the responses went out. CPU is the proxy process's user + system time (/proc/PID/stat, its
// libuv threads included) per request answered. Rounds alternate (BENCH_ROUNDS, the order of the
// configurations rotating each round); each "on" configuration is compared with "off" for the
// same response size and client in the same round, and the median of those per-round ratios is
// reported. After each run the bin is stopped (SIGTERM: it closes the HAR file) and the file is
// read: its size, its entries, the entries started during the measured load against the requests
// answered then, and one entry checked (intercepted, body kept or not as configured). The HAR
// files live in a temporary folder, deleted as soon as they are counted.
//
//   npm run bench:capture                                    # builds dist/, 5 rounds of 5 s
//   BENCH_ROUNDS=1 BENCH_SECONDS=2 node bench/capture-cost.mjs   # a quick run (after npm run build)
//
// The machine is shared: before each run the harness waits (BENCH_QUIET_MAX_WAIT s at most, 60)
// until other work uses under 0.15 of a core, and a run during which other work used more than a
// tenth of a core is run again (BENCH_RETRIES times at most, 2); the dropped attempts are kept in
// the JSON.
// BENCH_ROUNDS (5), BENCH_SECONDS (5), BENCH_WARMUP_SECONDS (1), BENCH_CONNECTIONS (32),
// BENCH_CLIENTS (undici,hey), BENCH_CONFIGS (a comma-separated subset of small/off, small/heads,
// small/bodies, 64k/off, 64k/heads, 64k/bodies; each "on" needs the "off" of its size for a ratio),
// BENCH_OUT (default bench/results/capture-cost-<UTC date>; .md and .json are added; "none" writes
// nothing). The HAR files are written without rotation (`maxFileBytes` 1 TiB), so one file holds
// every entry of a run and can be counted; rotation is not part of what is measured.
//
// Before the rounds, one unrecorded run per client warms up the harness itself. The system time is
// recorded apart (runs from 26 November 2026, 12:55 UTC on).
//
// `node bench/capture-cost.mjs report FILE.json` renders FILE.md again (and the summary in
// FILE.json) from a run's measurements, after a change to the report.
// `node bench/capture-cost.mjs origin <key.pem> <cert.pem>` is the origin this script starts (an
// HTTPS server in its own process; prints its port).
import { execFileSync, spawn } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { locate } from './compare/tools.mjs'

// ---------------------------------------------------------------------------------------------
// The origin (its own process).

const SMALL_BODY = Buffer.from('hello, world\n')
/** 64 KiB of JSON: an array of small records, padded to exactly 65536 bytes. */
function jsonBody (size) {
  const records = []
  let length = 2
  for (let i = 0; length < size - 200; i++) {
    const record = JSON.stringify({ id: i, name: `item-${i}`, tags: ['bench', `group-${i % 7}`], value: Number(((i * 7919) % 1000 / 1000).toFixed(3)), active: i % 3 !== 0 })
    records.push(record)
    length += record.length + 1
  }
  const text = `[${records.join(',')}]`
  return Buffer.from(text.padEnd(size, ' '))
}

if (process.argv[2] === 'origin') {
  const { createServer } = await import('node:https')
  const [keyPath, certPath] = process.argv.slice(3)
  const large = jsonBody(65_536)
  const tls = { key: readFileSync(keyPath), cert: readFileSync(certPath) }
  const server = createServer({ ...tls, keepAliveTimeout: 300_000, headersTimeout: 300_000, requestTimeout: 0 }, (req, res) => {
    const [body, type] = req.url === '/64k' ? [large, 'application/json'] : [SMALL_BODY, 'text/plain']
    res.writeHead(200, { 'content-type': type, 'content-length': body.length })
    res.end(body)
  })
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`))
  process.once('SIGTERM', () => process.exit(0))
} else if (process.argv[2] === 'report') {
  // `node bench/capture-cost.mjs report bench/results/capture-cost-DATE.json`: the summary and the
  // markdown again from a run's JSON (after a change to the report; the measurements are kept).
  const file = process.argv[3]
  const data = JSON.parse(readFileSync(file, 'utf8'))
  data.summary = summarize(data)
  writeFileSync(file, JSON.stringify(data, null, 2) + '\n')
  writeFileSync(file.replace(/\.json$/, '.md'), render(data, `node bench/capture-cost.mjs report ${file}`))
} else {
  await main()
}

// ---------------------------------------------------------------------------------------------
// The harness.

async function main () {
  const { ProxyAgent, request } = await import('undici')
  const { makeCa, makeLeaf } = await import('./pki.mjs')
  const { runHey } = await import('./compare/hey.mjs')

  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
  const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
  const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1)
  const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
  const here = resolve(import.meta.dirname, '..')
  const startedAt = new Date()
  const heyPath = locate(['hey'])
  const clients = (process.env.BENCH_CLIENTS ?? 'undici,hey').split(',').filter((client) => client !== '')
  const notes = []
  if (clients.includes('hey') && heyPath === undefined) {
    notes.push('hey is not installed (apt-get install hey): its runs are skipped')
    clients.splice(clients.indexOf('hey'), 1)
  }

  // Name (response/capture) → what the origin answers and the capture option (null: none):
  // `off` no capture, `heads` maxBodyBytes 0, `bodies` maxBodyBytes 65536.
  const CONFIGS = {
    'small/off': { path: '/small', capture: null },
    'small/heads': { path: '/small', capture: { maxBodyBytes: 0 } },
    'small/bodies': { path: '/small', capture: { maxBodyBytes: 65_536 } },
    '64k/off': { path: '/64k', capture: null },
    '64k/heads': { path: '/64k', capture: { maxBodyBytes: 0 } },
    '64k/bodies': { path: '/64k', capture: { maxBodyBytes: 65_536 } }
  }
  const configNames = process.env.BENCH_CONFIGS?.split(',').filter((name) => name !== '') ?? Object.keys(CONFIGS)
  for (const name of configNames) if (CONFIGS[name] === undefined) throw new Error(`unknown configuration ${JSON.stringify(name)}; known: ${Object.keys(CONFIGS).join(', ')}`)

  const USER = { name: 'bench', password: 'bench-capture-password' }
  const dir = mkdtempSync(join(tmpdir(), 'ffp-capture-cost-'))
  const children = new Set()
  const cleanUp = () => {
    for (const child of children) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  process.on('exit', cleanUp)
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130))

  const operatorCa = makeCa(dir, 'operator')
  const destinationCa = makeCa(dir, 'destination')
  const leaf = makeLeaf(dir, 'origin', destinationCa, ['127.0.0.1'])
  const operatorCaPem = readFileSync(operatorCa.certPath)

  // The origin, in its own process.
  const origin = spawn(process.execPath, [import.meta.filename, 'origin', leaf.keyPath, leaf.certPath], { stdio: ['ignore', 'pipe', 'inherit'] })
  children.add(origin)
  const originPort = Number(await new Promise((resolve) => origin.stdout.once('data', (chunk) => resolve(String(chunk).trim()))))

  // ---- /proc readings ----
  const statFields = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  /** utime + stime of `pid`, in µs (clock ticks of 10 ms). */
  const cpuMicros = (pid) => { const f = statFields(pid); return (Number(f[11]) + Number(f[12])) * 10_000 }
  /** System time alone of `pid`, in µs. */
  const systemMicros = (pid) => Number(statFields(pid)[12]) * 10_000
  /** This process's own CPU and that of the children it has waited for (hey), in µs. */
  const selfAndReapedMicros = () => { const f = statFields('self'); return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10_000 }
  /** Busy time of the whole machine (all but idle and iowait), in µs. */
  const machineBusyMicros = () => {
    const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/)
    const [user, nice, system, , , irq, softirq, steal] = values.map(Number)
    return (user + nice + system + irq + softirq + steal) * 10_000
  }
  const statusKiB = (pid, key) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${key}:\\s+(\\d+)`, 'm'))?.[1] ?? NaN)
  const tcpPassiveOpens = () => {
    const lines = readFileSync('/proc/net/snmp', 'utf8').split('\n').filter((line) => line.startsWith('Tcp:'))
    return Number(lines[1].split(/\s+/)[lines[0].split(/\s+/).indexOf('PassiveOpens')])
  }
  const busiest = () => { try { return execFileSync('ps', ['-eo', 'pcpu,etime,comm', '--sort=-pcpu'], { encoding: 'utf8' }).split('\n').slice(0, 6).join('\n') } catch { return '' } }

  // ---- the bin ----
  let runNumber = 0
  async function startBin (config) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const n = ++runNumber
    const harPath = join(dir, `run-${n}.har`)
    const logPath = join(dir, `run-${n}.log`)
    const configPath = join(dir, `run-${n}.json`)
    writeFileSync(configPath, JSON.stringify({
      listen: [{ host: '127.0.0.1', port }],
      users: { [USER.name]: USER.password },
      destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
      interception: { hosts: ['127.0.0.1'], ca: { cert: operatorCa.certPath, key: operatorCa.keyPath }, trustedDestinationCa: destinationCa.certPath },
      ...(config.capture === null ? {} : { capture: { file: harPath, maxBodyBytes: config.capture.maxBodyBytes, maxFileBytes: 2 ** 40 } })
    }, null, 2))
    const log = openSync(logPath, 'w')
    const bin = spawn(process.execPath, [join(here, 'dist', 'lib', 'cli', 'main.js'), '--config', configPath], { env: { ...process.env, NODE_ENV: 'production' }, stdio: ['ignore', log, 'inherit'] })
    closeSync(log)
    children.add(bin)
    const exited = new Promise((resolve) => bin.once('exit', (code, signal) => { children.delete(bin); resolve({ code, signal }) }))
    for (let tries = 0; tries < 200; tries++) {
      if (bin.exitCode !== null) throw new Error(`the bin exited at start (${bin.exitCode}); its log: ${readFileSync(logPath, 'utf8').slice(0, 2000)}`)
      if (await fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false)) return { bin, port, harPath, logPath, configPath, exited }
      await delay(50)
    }
    throw new Error('the bin did not start')
  }

  /** Waits until the proxy's CPU moved by at most one tick in 300 ms and the HAR file stopped growing (at most 120 s). */
  async function quiet (pid, harPath) {
    const size = () => { try { return statSync(harPath).size } catch { return -1 } }
    const began = Date.now()
    let last = { cpu: cpuMicros(pid), size: size() }
    let still = 0
    while (Date.now() - began < 120_000) {
      await delay(100)
      const now = { cpu: cpuMicros(pid), size: size() }
      still = now.cpu - last.cpu <= 10_000 && now.size === last.size ? still + 1 : 0
      last = now
      if (still >= 3) return (Date.now() - began) / 1000
    }
    return (Date.now() - began) / 1000
  }

  // ---- the clients ----
  const target = (config) => `https://127.0.0.1:${originPort}${config.path}`
  /** undici: `CONNECTIONS` loops of GETs through `session.agent` (one ProxyAgent per run: the warm-up opens its tunnels, the measured load reuses them). */
  async function undiciLoad (port, url, seconds, session) {
    session.agent ??= new ProxyAgent({ uri: `http://127.0.0.1:${port}`, token: `Basic ${Buffer.from(`${USER.name}:${USER.password}`).toString('base64')}`, requestTls: { ca: operatorCaPem }, connections: CONNECTIONS })
    const agent = session.agent
    let answered = 0
    let errors = 0
    let firstError
    const started = process.hrtime.bigint()
    const until = Date.now() + seconds * 1000
    await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < until) {
        try {
          const response = await request(url, { dispatcher: agent })
          await response.body.arrayBuffer()
          if (response.statusCode === 200) answered++
          else { errors++; firstError ??= `status ${response.statusCode}` }
        } catch (error) {
          errors++
          firstError ??= error.message
        }
      }
    }))
    const elapsed = Number(process.hrtime.bigint() - started) / 1e9
    return { requests: answered, errors, seconds: elapsed, firstError }
  }
  /** hey: a new process each time, so new tunnels for the measured load too (and Go's spare dials). */
  async function heyLoad (port, url, seconds) {
    const started = process.hrtime.bigint()
    const result = await runHey(heyPath, url, port, seconds, CONNECTIONS, true, USER)
    return { requests: result.requests, errors: result.errors, seconds: Number(process.hrtime.bigint() - started) / 1e9, p50: result.p50, p99: result.p99 }
  }
  const LOADS = { undici: undiciLoad, hey: heyLoad }

  // ---- the HAR file, counted ----
  /**
   * Reads a capture file (each entry one line starting `{"startedDateTime":"…"`): its size, its
   * entries, those started at or after `fromMs`, the first and last entries parsed, and whether
   * it ends with the HAR tail (closed whole).
   */
  function countHar (path) {
    if (!existsSync(path)) return { exists: false }
    const base = path.slice(dir.length + 1).replace(/\.har$/, '')
    // Rotated files (`run-N.1.har`, ...): none expected, maxFileBytes is 1 TiB.
    const otherFiles = readdirSync(dir).filter((name) => new RegExp(`^${base}\\.\\d+\\.har$`).test(name))
    const bytes = statSync(path).size
    const fd = openSync(path, 'r')
    const chunk = Buffer.allocUnsafe(8 << 20)
    // Each entry line: its offset, its length and its startedDateTime.
    const starts = []
    let sample
    let tail = ''
    try {
      let carry = Buffer.alloc(0)
      for (let position = 0; ;) {
        const read = readSync(fd, chunk, 0, chunk.length, position)
        if (read === 0) break
        const data = carry.length === 0 ? chunk.subarray(0, read) : Buffer.concat([carry, chunk.subarray(0, read)])
        const base = position - carry.length
        let from = 0
        for (let at = data.indexOf(10, from); at !== -1; at = data.indexOf(10, from)) {
          const head = data.subarray(from, Math.min(at, from + 64)).toString('latin1')
          if (head.startsWith('{"startedDateTime":"')) starts.push({ offset: base + from, length: at - from, startedAt: Date.parse(head.slice(20, 44)) })
          from = at + 1
        }
        carry = Buffer.from(data.subarray(from))
        position += read
      }
      if (starts.length > 0) {
        const entry = starts[Math.floor(starts.length / 2)]
        const buffer = Buffer.alloc(entry.length)
        readSync(fd, buffer, 0, entry.length, entry.offset)
        sample = JSON.parse(buffer.toString('utf8').replace(/,$/, ''))
      }
      const end = Buffer.alloc(Math.min(5, bytes))
      readSync(fd, end, 0, end.length, bytes - end.length)
      tail = end.toString('latin1')
    } finally {
      closeSync(fd)
    }
    // A file small enough is parsed whole: a valid HAR document whose entries are those counted.
    let parsedEntries = null
    if (bytes <= 256 << 20) {
      try { parsedEntries = JSON.parse(readFileSync(path, 'utf8')).log.entries.length } catch (error) { parsedEntries = `not valid JSON: ${error.message}` }
    }
    return { exists: true, bytes, entries: starts.length, parsedEntries, startTimes: starts.map((s) => s.startedAt), sample, endsWhole: tail === '\n]}}\n', otherFiles }
  }
  const describeSample = (entry) => entry === undefined
    ? undefined
    : {
        method: entry.request?.method,
        url: entry.request?.url,
        status: entry.response?.status,
        intercepted: entry._intercepted,
        user: entry._user,
        contentSize: entry.response?.content?.size,
        textLength: entry.response?.content?.text?.length ?? 0,
        comment: entry.response?.content?.comment,
        proxyAuthorizationWritten: (entry.request?.headers ?? []).some((h) => h.name.toLowerCase() === 'proxy-authorization')
      }

  /**
   * Waits (at most BENCH_QUIET_MAX_WAIT s, default 60) until the machine's busy time outside this
   * harness and the origin stayed under 0.15 of a core for one second: other engineers' compilers
   * and tests share the machine. Resolves the seconds waited.
   */
  async function quietMachine () {
    const began = Date.now()
    const maxWait = Number(process.env.BENCH_QUIET_MAX_WAIT ?? 60) * 1000
    for (;;) {
      const before = { machine: machineBusyMicros(), origin: cpuMicros(origin.pid), self: selfAndReapedMicros() }
      await delay(1000)
      const other = machineBusyMicros() - before.machine - (cpuMicros(origin.pid) - before.origin) - (selfAndReapedMicros() - before.self)
      if (other < 150_000 || Date.now() - began >= maxWait) return (Date.now() - began) / 1000
    }
  }

  /** One run: a fresh bin of configuration `name`, warmed up, loaded by `client`, its HAR file counted. */
  async function oneRun (round, name, client, attempt) {
    const machineQuietWaitSeconds = await quietMachine()
    const config = CONFIGS[name]
    const { bin, port, harPath, logPath, configPath, exited } = await startBin(config)
    const url = target(config)
    const warmStarted = Date.now()
    const session = {}
    const warm = await LOADS[client](port, url, WARMUP_SECONDS, session)
    const settleBefore = await quiet(bin.pid, harPath)
    const cpuBefore = cpuMicros(bin.pid)
    const systemBefore = systemMicros(bin.pid)
    const othersBefore = { machine: machineBusyMicros(), origin: cpuMicros(origin.pid), self: selfAndReapedMicros() }
    const acceptedBefore = tcpPassiveOpens()
    const measuredFrom = Date.now()
    const result = await LOADS[client](port, url, SECONDS, session)
    const cpuAtLoadEnd = cpuMicros(bin.pid)
    const settleAfter = await quiet(bin.pid, harPath)
    const cpuAfter = cpuMicros(bin.pid)
    const systemAfter = systemMicros(bin.pid)
    const accepted = tcpPassiveOpens() - acceptedBefore
    const machine = machineBusyMicros() - othersBefore.machine
    const originCpu = cpuMicros(origin.pid) - othersBefore.origin
    const selfCpu = selfAndReapedMicros() - othersBefore.self
    const proxyCpu = cpuAfter - cpuBefore
    const rssMiB = statusKiB(bin.pid, 'VmRSS') / 1024
    const peakRssMiB = statusKiB(bin.pid, 'VmHWM') / 1024
    await session.agent?.close()
    bin.kill('SIGTERM')
    const exit = await exited
    const log = readFileSync(logPath, 'utf8')
    // Warnings and errors (pino levels 40 to 60): a capture file that stopped would be one.
    const logProblems = log.split('\n').filter((line) => /"level":[456]0\b/.test(line))
    const har = config.capture === null ? { exists: false } : countHar(harPath)
    const answeredMeasured = result.requests + result.errors
    const entriesMeasured = har.exists ? har.startTimes.filter((t) => t >= measuredFrom - 5).length : NaN
    const record = {
      round: round + 1,
      attempt: attempt + 1,
      machineQuietWaitSeconds,
      config: name,
      client,
      path: config.path,
      maxBodyBytes: config.capture?.maxBodyBytes ?? null,
      requests: result.requests,
      errors: result.errors,
      firstError: result.firstError,
      seconds: result.seconds,
      reqPerSec: result.requests / result.seconds,
      p50Ms: result.p50,
      p99Ms: result.p99,
      cpuMicrosPerRequest: proxyCpu / result.requests,
      cpuMicrosPerRequestDuringLoad: (cpuAtLoadEnd - cpuBefore) / result.requests,
      // The kernel's share (system calls: sockets, the HAR file's writes, page faults).
      systemMicrosPerRequest: (systemAfter - systemBefore) / result.requests,
      proxyCpuSeconds: proxyCpu / 1e6,
      proxyCpuAfterLoadSeconds: (cpuAfter - cpuAtLoadEnd) / 1e6,
      quietWaitSeconds: { beforeLoad: settleBefore, afterLoad: settleAfter },
      originCpuSeconds: originCpu / 1e6,
      harnessAndHeyCpuSeconds: selfCpu / 1e6,
      // Busy time of the machine not explained by the proxy, the origin, this process and hey:
      // other engineers' work, or the kernel's writeback of the HAR file.
      otherCpuSeconds: (machine - proxyCpu - originCpu - selfCpu) / 1e6,
      machineCpuSeconds: machine / 1e6,
      connectionsAccepted: accepted,
      rssMiB,
      peakRssMiB,
      warmup: { requests: warm.requests, errors: warm.errors, startedAt: warmStarted },
      exit,
      logProblems: logProblems.slice(0, 5),
      logProblemCount: logProblems.length,
      loadAverage1m: loadavg()[0],
      har: har.exists
        ? {
            bytes: har.bytes,
            entries: har.entries,
            bytesPerEntry: har.entries > 0 ? har.bytes / har.entries : NaN,
            entriesMeasured,
            answeredMeasured,
            // Entries started during the measured load against the requests answered (2xx and
            // failures) then: hey may leave up to a request per connection unanswered at its
            // deadline that the proxy still recorded.
            entriesMinusAnswered: entriesMeasured - answeredMeasured,
            entriesWarmup: har.entries - entriesMeasured,
            answeredWarmup: warm.requests + warm.errors,
            endsWhole: har.endsWhole,
            // Entries when the file (up to 256 MiB) was parsed whole as JSON; null when too large.
            parsedEntries: har.parsedEntries,
            otherFiles: har.otherFiles,
            sample: describeSample(har.sample)
          }
        : null
    }
    rmSync(harPath, { force: true })
    for (const other of har.otherFiles ?? []) rmSync(join(dir, other), { force: true })
    rmSync(logPath, { force: true })
    rmSync(configPath, { force: true })
    print(`round ${round + 1} ${name} ${client}${attempt > 0 ? ` (again, attempt ${attempt + 1})` : ''}: ${fixed(record.reqPerSec, 0)} req/s, ${fixed(record.cpuMicrosPerRequest)} µs CPU per request (${fixed(record.cpuMicrosPerRequestDuringLoad)} during the load, ${fixed(record.proxyCpuAfterLoadSeconds, 2)} s after), errors ${result.errors}${result.firstError ? ` (${result.firstError})` : ''}, ${accepted} connections accepted, other CPU ${fixed(record.otherCpuSeconds, 2)} s, peak RSS ${fixed(peakRssMiB, 0)} MiB` +
      (record.har === null ? '' : `; HAR ${fixed(record.har.bytes / 2 ** 20)} MiB, ${record.har.entries} entries (${record.har.entriesMeasured} in the load against ${record.har.answeredMeasured} answered, ${record.har.entriesWarmup} / ${record.har.answeredWarmup} in the warm-up)${record.har.endsWhole ? '' : ', FILE NOT CLOSED WHOLE'}`) +
      (record.logProblemCount > 0 ? `; ${record.logProblemCount} log lines at warn or above: ${record.logProblems[0].slice(0, 300)}` : '') +
      (exit.code !== 0 && exit.signal === null ? `; exit code ${exit.code}` : ''))
    return record
  }

  // ---- the rounds ----
  const OTHER_CPU_LIMIT = 0.1
  const RETRIES = Number(process.env.BENCH_RETRIES ?? 2)
  const dropped = []
  const loadBefore = loadavg()
  const busiestBefore = busiest()
  const runs = []
  const print = (line) => process.stderr.write(`${line}\n`)
  print(`capture cost: ${ROUNDS} rounds of ${SECONDS} s (+${WARMUP_SECONDS} s warm-up), ${CONNECTIONS} connections, clients ${clients.join(', ')}, configurations ${configNames.join(' | ')}; load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}`)
  // The harness's own warm-up (its undici client, the origin, the page cache of dist/): the first
  // run of a fresh harness came out slow in the trials. One run of each client, not recorded.
  for (const client of clients) {
    const record = await oneRun(-1, configNames[0], client, 0)
    print(`(harness warm-up, not recorded: ${configNames[0]} ${client} ${fixed(record.reqPerSec, 0)} req/s, ${fixed(record.cpuMicrosPerRequest)} µs)`)
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = configNames.map((_, i) => configNames[(i + round) % configNames.length])
    for (const name of order) {
      for (const client of round % 2 === 0 ? clients : [...clients].reverse()) {
        // A run that shared the machine with other work (more than a tenth of a core's worth of
        // busy time outside the proxy, the origin and the clients) is run again, twice at most;
        // the attempts dropped stay in the JSON.
        for (let attempt = 0; ; attempt++) {
          const record = await oneRun(round, name, client, attempt)
          if (record.otherCpuSeconds <= OTHER_CPU_LIMIT * record.seconds || attempt === RETRIES) {
            runs.push(record)
            break
          }
          dropped.push(record)
        }
      }
    }
  }
  const loadAfter = loadavg()
  const busiestAfter = busiest()
  const command = `${Object.entries(process.env).filter(([key]) => key.startsWith('BENCH_')).map(([key, value]) => `${key}=${value} `).join('')}` +
    (process.env.npm_lifecycle_event === 'bench:capture' ? 'npm run bench:capture' : `node ${relative(process.cwd(), import.meta.filename)}`)
  const heyVersion = heyPath === undefined ? undefined : (() => { try { return execFileSync('dpkg-query', ['-W', '-f=$' + '{Version}', 'hey'], { encoding: 'utf8' }) } catch { return 'unknown' } })()
  const data = {
    command,
    startedAt: startedAt.toISOString(),
    machine: {
      cores: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      hey: heyVersion,
      undici: JSON.parse(readFileSync(join(here, 'node_modules', 'undici', 'package.json'), 'utf8')).version,
      loadAverageBefore: loadBefore,
      loadAverageAfter: loadAfter
    },
    busiestProcesses: { before: busiestBefore, after: busiestAfter },
    settings: {
      rounds: ROUNDS,
      seconds: SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      connections: CONNECTIONS,
      clients,
      otherCpuLimit: OTHER_CPU_LIMIT,
      retries: RETRIES
    },
    configs: Object.fromEntries(configNames.map((name) => [name, CONFIGS[name]])),
    notes,
    summary: null,
    runs,
    // Attempts run again because other work shared the machine (see settings.otherCpuLimit).
    droppedAttempts: dropped
  }
  data.summary = summarize(data)
  const markdown = render(data)
  process.stdout.write(markdown)
  const out = process.env.BENCH_OUT ?? join(here, 'bench', 'results', `capture-cost-${startedAt.toISOString().slice(0, 10)}`)
  if (out !== 'none') {
    mkdirSync(resolve(out, '..'), { recursive: true })
    writeFileSync(`${out}.md`, markdown)
    writeFileSync(`${out}.json`, JSON.stringify(data, null, 2) + '\n')
    print(`written: ${out}.md, ${out}.json`)
  }
  origin.kill('SIGTERM')
  process.exit(0)
}

// ---------------------------------------------------------------------------------------------
// The summary and the report, from the JSON a run writes (also `report FILE.json`).

function median (values) {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (finite.length === 0) return NaN
  const middle = Math.floor(finite.length / 2)
  return finite.length % 2 === 1 ? finite[middle] : (finite[middle - 1] + finite[middle]) / 2
}
// Function declarations, not constants: main() runs (awaited at the top) before this point.
function fixed (n, digits = 1) {
  return Number.isFinite(n) ? n.toFixed(digits) : '-'
}
function thousands (n) {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-'
}
/** The "off" configuration of the response size of `name` (`small/heads` → `small/off`). */
function offOf (name) {
  return `${name.split('/')[0]}/off`
}

/** Per configuration and client: medians, per-round ratios to "off", the HAR counts. */
function summarize ({ runs, configs, settings }) {
  const stormLimit = 3 * settings.connections
  const summary = []
  for (const name of Object.keys(configs)) {
    for (const client of settings.clients) {
      const mine = runs.filter((r) => r.config === name && r.client === client)
      const off = offOf(name)
      const baseOf = (r) => runs.find((b) => b.config === off && b.client === client && b.round === r.round)
      const pairs = name === off ? [] : mine.map((r) => [r, baseOf(r)]).filter(([, base]) => base !== undefined)
      // Pairs where neither run had a storm of Go's spare dials (docs/benchmarks.md): more than
      // three times as many connections accepted as the client keeps.
      const calm = pairs.filter(([r, base]) => r.connectionsAccepted <= stormLimit && base.connectionsAccepted <= stormLimit)
      const withHar = mine.filter((r) => r.har !== null)
      summary.push({
        config: name,
        client,
        rounds: mine.length,
        reqPerSec: median(mine.map((r) => r.reqPerSec)),
        cpuMicrosPerRequest: median(mine.map((r) => r.cpuMicrosPerRequest)),
        cpuMicrosPerRequestEachRound: mine.map((r) => r.cpuMicrosPerRequest),
        cpuMicrosPerRequestDuringLoad: median(mine.map((r) => r.cpuMicrosPerRequestDuringLoad)),
        systemMicrosPerRequest: median(mine.map((r) => r.systemMicrosPerRequest)),
        cpuMicrosPerRequestAfterLoad: median(mine.map((r) => r.proxyCpuAfterLoadSeconds * 1e6 / r.requests)),
        comparedWith: name === off ? null : off,
        cpuRatioEachRound: pairs.map(([r, base]) => r.cpuMicrosPerRequest / base.cpuMicrosPerRequest),
        cpuRatio: name === off ? null : median(pairs.map(([r, base]) => r.cpuMicrosPerRequest / base.cpuMicrosPerRequest)),
        reqPerSecRatio: name === off ? null : median(pairs.map(([r, base]) => r.reqPerSec / base.reqPerSec)),
        // The same, over the rounds where neither run stormed; null when no round qualifies.
        calmRounds: name === off ? null : calm.length,
        calmCpuRatio: name === off || calm.length === 0 ? null : median(calm.map(([r, base]) => r.cpuMicrosPerRequest / base.cpuMicrosPerRequest)),
        calmCpuMicrosPerRequestDifference: name === off || calm.length === 0
          ? null
          : median(calm.map(([r, base]) => r.cpuMicrosPerRequest - base.cpuMicrosPerRequest)),
        connectionsAccepted: median(mine.map((r) => r.connectionsAccepted)),
        stormRuns: mine.filter((r) => r.connectionsAccepted > stormLimit).length,
        otherCpuSeconds: median(mine.map((r) => r.otherCpuSeconds)),
        peakRssMiB: median(mine.map((r) => r.peakRssMiB)),
        errors: mine.reduce((sum, r) => sum + r.errors, 0),
        answered: mine.reduce((sum, r) => sum + r.requests, 0),
        har: withHar.length === 0
          ? null
          : {
              bytesPerRun: median(withHar.map((r) => r.har.bytes)),
              bytesPerEntry: median(withHar.map((r) => r.har.bytesPerEntry)),
              bytesWrittenPerSecond: median(withHar.map((r) => r.har.bytes * r.har.entriesMeasured / r.har.entries / r.seconds)),
              entriesMeasured: withHar.reduce((sum, r) => sum + r.har.entriesMeasured, 0),
              answeredMeasured: withHar.reduce((sum, r) => sum + r.har.answeredMeasured, 0),
              entriesWarmup: withHar.reduce((sum, r) => sum + r.har.entriesWarmup, 0),
              answeredWarmup: withHar.reduce((sum, r) => sum + r.har.answeredWarmup, 0),
              worstRunDifference: withHar.map((r) => r.har.entriesMinusAnswered).sort((a, b) => Math.abs(b) - Math.abs(a))[0],
              filesNotWhole: withHar.filter((r) => !r.har.endsWhole).length,
              sample: withHar[0].har.sample
            }
      })
    }
  }
  return summary
}

function installedUndici () {
  try { return JSON.parse(readFileSync(join(import.meta.dirname, '..', 'node_modules', 'undici', 'package.json'), 'utf8')).version } catch { return 'unknown' }
}

/** The markdown report of a run's JSON. */
function render (data, renderedAgain) {
  const { command, startedAt, machine, settings, notes, summary, runs, droppedAttempts: dropped, busiestProcesses } = data
  const CONNECTIONS = settings.connections
  const otherCpuLimit = settings.otherCpuLimit ?? 0.1
  const retries = settings.retries ?? 2
  const lines = []
  lines.push(`# Capture cost (${startedAt})`, '')
  lines.push('```', command, '```', '')
  if (renderedAgain !== undefined) lines.push(`(this report rendered again from the run's JSON: \`${renderedAgain}\`)`, '')
  lines.push(`machine: ${machine.cores} cores (${machine.cpuModel}), Node ${machine.node}, hey ${machine.hey ?? 'not installed'}, undici ${machine.undici ?? `${installedUndici()} (installed when the report was rendered)`}`)
  lines.push(`load average before: ${machine.loadAverageBefore.map((l) => l.toFixed(2)).join(' ')}; after: ${machine.loadAverageAfter.map((l) => l.toFixed(2)).join(' ')}; 1-minute load average after each run: ${fixed(Math.min(...runs.map((r) => r.loadAverage1m)), 2)} to ${fixed(Math.max(...runs.map((r) => r.loadAverage1m)), 2)} (median ${fixed(median(runs.map((r) => r.loadAverage1m)), 2)}; 2 cores: the proxy, the origin and the client make about 2 by themselves)`)
  lines.push(`settings: ${settings.rounds} rounds of ${settings.seconds} s (after a ${settings.warmupSeconds} s warm-up of each fresh bin), ${CONNECTIONS} keep-alive connections, clients ${settings.clients.join(' and ')}, the order of the configurations rotating each round`)
  lines.push('proxy: the bin (dist/lib/cli/main.js, NODE_ENV=production, log level info, access log to a file), one user (Basic), interception of the origin (operator CA, trustedDestinationCa); capture `{ file, maxBodyBytes, maxFileBytes: 2^40 }` (no rotation)')
  lines.push('origin: an HTTPS server (Node, its own process): `/small` 13 B text/plain, `/64k` 65,536 B application/json')
  lines.push('configurations: `off` no capture, `heads` `maxBodyBytes: 0`, `bodies` `maxBodyBytes: 65536` (the default; a 64 KiB body is kept whole)')
  lines.push('CPU: the proxy process\'s user + system time per request answered, from before the measured load until the proxy is quiet again after it (entries built and written after the responses included)')
  for (const note of notes) lines.push(`note: ${note}`)
  lines.push('')
  lines.push(`| configuration | client | req/s | CPU µs per request | each round (µs) | median per-round ratio to off: CPU / req/s | rounds without a storm: CPU ratio, µs added | TCP accepted (runs > ${3 * CONNECTIONS}) | peak RSS MiB | HAR per run | bytes per entry | HAR MB/s | entries / answered |`)
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
  for (const s of summary) {
    const ratio = s.cpuRatio === null ? '' : `**${fixed(s.cpuRatio, 2)}** / ${fixed(s.reqPerSecRatio, 2)}`
    const calm = s.calmRounds === null ? '' : s.calmRounds === 0 ? 'none' : `${fixed(s.calmCpuRatio, 2)}, ${s.calmCpuMicrosPerRequestDifference >= 0 ? '+' : ''}${fixed(s.calmCpuMicrosPerRequestDifference)} (${s.calmRounds})`
    const har = s.har === null
      ? '| | | | |'
      : `| ${fixed(s.har.bytesPerRun / 2 ** 20)} MiB | ${thousands(s.har.bytesPerEntry)} | ${fixed(s.har.bytesWrittenPerSecond / 1e6)} | ${thousands(s.har.entriesMeasured)} / ${thousands(s.har.answeredMeasured)} |`
    lines.push(`| ${s.config} | ${s.client} | ${thousands(s.reqPerSec)} | ${fixed(s.cpuMicrosPerRequest)} | ${s.cpuMicrosPerRequestEachRound.map((v) => fixed(v)).join(' / ')} | ${ratio} | ${calm} | ${thousands(s.connectionsAccepted)} (${s.stormRuns}) | ${fixed(s.peakRssMiB, 0)} ${har}`)
  }
  lines.push('')
  lines.push('Medians over the rounds. Ratios: each "on" run\'s CPU per request (and req/s) over the "off" run of the same response size, client and round; the median of those. ' +
    `"Rounds without a storm": the same over the rounds where neither run accepted more than ${3 * CONNECTIONS} TCP connections (hey's spare dials, each a CONNECT and two TLS handshakes, make a storm; see docs/benchmarks.md), with the CPU µs per request added; in brackets how many rounds. ` +
    '"HAR per run" includes the warm-up\'s entries; "HAR MB/s" is what the measured load wrote. "entries / answered": entries whose startedDateTime falls in the measured load against the requests answered then (2xx and failures), summed over the rounds.')
  lines.push('')
  const mismatched = runs.filter((r) => r.har !== null && Math.abs(r.har.entriesMinusAnswered) > CONNECTIONS)
  const warmupMismatched = runs.filter((r) => r.har !== null && Math.abs(r.har.entriesWarmup - r.har.answeredWarmup) > CONNECTIONS)
  const unparsed = runs.filter((r) => r.har !== null && r.har.parsedEntries !== null && r.har.parsedEntries !== r.har.entries)
  const parsed = runs.filter((r) => r.har !== null && r.har.parsedEntries !== null).length
  const problems = runs.filter((r) => r.logProblemCount > 0 || (r.har !== null && !r.har.endsWhole) || r.errors > 0 ||
    (r.exit.code !== 0 && r.exit.signal === null))
  const exact = runs.filter((r) => r.har !== null && r.har.entriesMinusAnswered === 0).length
  lines.push('## Checks', '')
  lines.push(mismatched.length === 0
    ? `- Entries against requests answered: every run within ${CONNECTIONS} (one request per connection) of the requests answered; ${exact} of ${runs.filter((r) => r.har !== null).length} runs exactly.`
    : `- Entries against requests answered: ${mismatched.length} runs differ by more than ${CONNECTIONS}: ${mismatched.map((r) => `round ${r.round} ${r.config} ${r.client}: ${r.har.entriesMeasured} entries, ${r.har.answeredMeasured} answered`).join('; ')}`)
  lines.push(warmupMismatched.length === 0 ? '- The warm-ups\' entries match their requests too.' : `- Warm-ups whose entries differ: ${warmupMismatched.map((r) => `round ${r.round} ${r.config} ${r.client}: ${r.har.entriesWarmup} / ${r.har.answeredWarmup}`).join('; ')}`)
  lines.push(unparsed.length === 0
    ? `- HAR files parsed whole as JSON: ${parsed === 0 ? 'none (only files up to 256 MiB are)' : `${parsed} of ${runs.filter((r) => r.har !== null).length} (those up to 256 MiB), every one valid, with the entries counted line by line`}. Every file ends with the HAR tail: ${runs.every((r) => r.har === null || r.har.endsWhole) ? 'yes' : 'no'}.`
    : `- HAR files parsed whole: ${unparsed.map((r) => `round ${r.round} ${r.config} ${r.client}: ${r.har.parsedEntries} against ${r.har.entries} lines`).join('; ')}`)
  const samples = summary.filter((s) => s.har !== null).map((s) => `${s.config} (${s.client}): ${JSON.stringify(s.har.sample)}`)
  lines.push(`- One entry of each: ${samples.length === 0 ? 'none' : ''}`)
  for (const sample of samples) lines.push(`  - ${sample}`)
  lines.push(problems.length === 0
    ? '- No errors, no log line at warn or above, every bin exited cleanly.'
    : `- Problems: ${problems.map((r) => `round ${r.round} ${r.config} ${r.client}: ${r.errors} errors${r.firstError ? ` (${r.firstError})` : ''}, ${r.logProblemCount} log lines${r.logProblems[0] ? ` (${r.logProblems[0].slice(0, 200)})` : ''}${r.har !== null && !r.har.endsWhole ? ', HAR not closed whole' : ''}, exit ${JSON.stringify(r.exit)}`).join('; ')}`)
  lines.push(`- Runs redone because other work shared the machine (other CPU above ${otherCpuLimit} of a core during the load): ${dropped.length === 0 ? 'none' : dropped.map((r) => `round ${r.round} ${r.config} ${r.client} (${fixed(r.otherCpuSeconds, 2)} s)`).join('; ')}; runs kept although above it (after ${retries} retries): ${runs.filter((r) => r.otherCpuSeconds > otherCpuLimit * r.seconds).length}. Each run first waited for the machine to go quiet (under 0.15 of a core of other work for 1 s): ${fixed(median(runs.map((r) => r.machineQuietWaitSeconds)), 1)} s median, ${fixed(Math.max(...runs.map((r) => r.machineQuietWaitSeconds)), 1)} s at most.`)
  lines.push('')
  lines.push('## Each run', '')
  // Runs before 26 November 2026, 12:55 UTC did not record the system time apart.
  const withSystem = runs.some((r) => r.systemMicrosPerRequest !== undefined)
  lines.push(`| round | configuration | client | attempt | req/s | CPU µs per request | ${withSystem ? 'of which system | ' : ''}during the load | proxy CPU s after the load | quiet wait s | TCP accepted | other CPU s | load 1m | peak RSS MiB | HAR MiB | entries (measured / answered) |`)
  lines.push(`|---|---|---|---|---|---|${withSystem ? '---|' : ''}---|---|---|---|---|---|---|---|---|`)
  for (const r of runs) {
    lines.push(`| ${r.round} | ${r.config} | ${r.client} | ${r.attempt} | ${thousands(r.reqPerSec)} | ${fixed(r.cpuMicrosPerRequest)} |${withSystem ? ` ${fixed(r.systemMicrosPerRequest)} |` : ''} ${fixed(r.cpuMicrosPerRequestDuringLoad)} | ${fixed(r.proxyCpuAfterLoadSeconds, 2)} | ${fixed(r.quietWaitSeconds.afterLoad, 1)} | ${r.connectionsAccepted} | ${fixed(r.otherCpuSeconds, 2)} | ${fixed(r.loadAverage1m, 2)} | ${fixed(r.peakRssMiB, 0)} | ${r.har === null ? '' : fixed(r.har.bytes / 2 ** 20)} | ${r.har === null ? '' : `${r.har.entriesMeasured} / ${r.har.answeredMeasured}`} |`)
  }
  lines.push('')
  lines.push('"other CPU": busy time of the machine (/proc/stat) during the measured load and the quiet wait after it not used by the proxy, the origin, this harness or hey (other work on the machine, kernel writeback); the two ways of counting disagree by a few tenths of a second, hence the negative values.')
  lines.push('', 'Busiest processes before the run:', '```', busiestProcesses.before, '```', 'and after:', '```', busiestProcesses.after, '```')
  return lines.join('\n') + '\n'
}
