import { test, type Test } from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { ProxyAgent, request } from 'undici'
import { listeningUrls, printed, runBin, type BinProcess } from './helpers/cli-bin'
import { within } from './helpers/within'

const RELEASE_LINE = /"msg":"gave idle memory back"/
// The collection that gives memory back takes `flavor: 'last-resort'` from V8 12 (Node 22) on.
const CAN_RELEASE = Number(process.versions.v8.split('.')[0]) >= 12

interface Release { rssBefore: number, rssAfter: number, milliseconds: number }

function releases (lines: string[]): Release[] {
  return lines.map((line) => (JSON.parse(line) as { idleMemory: Release }).idleMemory)
}

function residentBytes (bin: BinProcess): number {
  const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${String(bin.child.pid)}/status`, 'utf8'))?.[1]
  return Number(kib) * 1024
}

/** Starts the bin with `extra` added to its configuration, written as `name`.json in `directory`. */
function startBin (t: Test, directory: string, name: string, extra: object): BinProcess {
  const file = join(directory, `${name}.json`)
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.0/8'] },
    log: { level: 'debug' },
    ...extra
  }))
  return runBin(t, ['--config', file])
}

/** An origin that answers each `burst` of requests only once all of them have reached it. */
async function burstOrigin (t: Test, burst: number): Promise<string> {
  let waiting: Array<() => void> = []
  const origin = createServer((_request, res) => {
    waiting.push(() => res.end('small'))
    if (waiting.length < burst) return
    for (const answer of waiting) answer()
    waiting = []
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { origin.close() })
  return `http://127.0.0.1:${(origin.address() as AddressInfo).port}/small`
}

/**
 * Sends bursts of `burst` requests at once through the bin until its RSS has grown 16 MiB past
 * `from`: the requests in flight at once grow its heap.
 */
async function growThroughBursts (t: Test, bin: BinProcess, url: string, target: string, burst: number, from: number): Promise<void> {
  const agent = new ProxyAgent({ uri: url, connections: burst })
  t.teardown(() => agent.close())
  await within((async () => {
    while (residentBytes(bin) < from + 16 * 1024 * 1024) {
      await Promise.all(Array.from({ length: burst }, async () => {
        const response = await request(target, { dispatcher: agent })
        await response.body.dump()
      }))
    }
  })(), 'bursts growing the RSS by 16 MiB', 60_000)
}

test('bin: with releaseIdleMemory it gives the heap back as soon as it listens, and after traffic once quiet for that many ms', async (t) => {
  const BURST = 512
  const directory = t.testdir()
  const patient = startBin(t, directory, 'patient', { releaseIdleMemory: 600_000 })
  const eager = startBin(t, directory, 'eager', { releaseIdleMemory: 2000 })
  const [patientUrl = ''] = await listeningUrls(patient)
  const [eagerUrl = ''] = await listeningUrls(eager)
  if (!CAN_RELEASE) {
    t.match(eager.stdout(), /idle memory: kept \(giving it back needs Node 22 or later\)\n/)
    return
  }
  t.match(eager.stdout(), /idle memory: given back to the system after start-up, and after 2000 ms quiet following traffic\n/)
  const [patientStart] = releases(await printed(patient, RELEASE_LINE))
  const [eagerStart] = releases(await printed(eager, RELEASE_LINE))
  for (const release of [patientStart, eagerStart]) t.ok(release !== undefined && release.rssAfter < release.rssBefore, `start-up: the RSS fell: ${JSON.stringify(release)}`)

  // The same bursts through both, the patient bin's first: it has been quiet the longer when
  // the eager one, quiet for 2 s, gives the growth back.
  const target = await burstOrigin(t, BURST)
  await growThroughBursts(t, patient, patientUrl, target, BURST, patientStart?.rssAfter ?? 0)
  await growThroughBursts(t, eager, eagerUrl, target, BURST, eagerStart?.rssAfter ?? 0)
  const second = releases(await printed(eager, RELEASE_LINE, 2))[1]
  t.ok(second !== undefined && second.rssBefore >= (eagerStart?.rssAfter ?? 0) + 8 * 1024 * 1024 && second.rssAfter < second.rssBefore, `after the burst: the RSS fell again: ${JSON.stringify(second)}`)
  t.equal(patient.stdout().split('\n').filter((line) => RELEASE_LINE.test(line)).length, 1, 'the bin waiting 600 s after traffic has not released again')
  for (const bin of [patient, eager]) {
    bin.child.kill('SIGTERM')
    t.equal(await bin.exited, 0)
  }
})

test('bin: by default, and with releaseIdleMemory "start", the heap is given back after start-up only; false keeps it; true also after 30 s quiet', async (t) => {
  const directory = t.testdir()
  const byDefault = startBin(t, directory, 'default', {})
  const atStart = startBin(t, directory, 'start', { releaseIdleMemory: 'start' })
  const off = startBin(t, directory, 'off', { releaseIdleMemory: false })
  const always = startBin(t, directory, 'on', { releaseIdleMemory: true })
  const [offUrl = ''] = await listeningUrls(off)
  for (const bin of [byDefault, atStart, always]) await listeningUrls(bin)
  for (const bin of [byDefault, atStart]) {
    t.match(bin.stdout(), CAN_RELEASE ? /idle memory: given back to the system after start-up; kept after traffic\n/ : /idle memory: kept \(giving it back needs Node 22 or later\)\n/)
  }
  t.match(always.stdout(), CAN_RELEASE ? /idle memory: given back to the system after start-up, and after 30000 ms quiet following traffic\n/ : /idle memory: kept \(giving it back needs Node 22 or later\)\n/, 'true: 30 s after traffic')
  t.match(off.stdout(), /idle memory: kept \(releaseIdleMemory is false\)\n/)
  if (CAN_RELEASE) {
    for (const bin of [byDefault, atStart, always]) {
      const [release] = releases(await printed(bin, RELEASE_LINE))
      t.ok(release !== undefined && release.rssAfter < release.rssBefore, `start-up: the RSS fell: ${JSON.stringify(release)}`)
    }
  }
  // The start-up's release runs in the tick after the summary, before any request is read: once
  // the off bin has answered one, it would have logged it.
  const health = await request(`${offUrl}/healthz`)
  t.equal(health.statusCode, 200)
  await health.body.dump()
  t.notMatch(off.stdout(), RELEASE_LINE, 'false: no release')
  for (const bin of [byDefault, atStart, off, always]) {
    bin.child.kill('SIGTERM')
    t.equal(await bin.exited, 0)
  }
})
