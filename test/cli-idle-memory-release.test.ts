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

function startBin (t: Test, extra: object): BinProcess {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.0/8'] },
    log: { level: 'debug' },
    ...extra
  }))
  return runBin(t, ['--config', file])
}

test('bin: once quiet after start-up it gives the heap the start-up grew back to the system, and again after a burst of traffic', async (t) => {
  const bin = startBin(t, {})
  const [url = ''] = await listeningUrls(bin)
  if (!CAN_RELEASE) {
    t.match(bin.stdout(), /idle memory: kept \(giving it back needs Node 22 or later\)\n/)
    return
  }
  t.match(bin.stdout(), /idle memory: given back to the system once the proxy is quiet\n/)
  const [first] = releases(await printed(bin, RELEASE_LINE))
  t.ok(first !== undefined && first.rssAfter < first.rssBefore, `the RSS fell: ${JSON.stringify(first)}`)

  // A burst that grows the process well past what the first release left: 512 requests in
  // flight at once, the origin answering them only when all have reached it. Once it stops the
  // proxy is quiet again and gives the growth back.
  const BURST = 512
  let waiting: Array<() => void> = []
  const origin = createServer((_request, res) => {
    waiting.push(() => res.end('small'))
    if (waiting.length < BURST) return
    for (const answer of waiting) answer()
    waiting = []
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { origin.close() })
  const agent = new ProxyAgent({ uri: url, connections: BURST })
  t.teardown(() => agent.close())
  const target = `http://127.0.0.1:${(origin.address() as AddressInfo).port}/small`
  const grown = (first?.rssAfter ?? 0) + 16 * 1024 * 1024
  await within((async () => {
    while (residentBytes(bin) < grown) {
      await Promise.all(Array.from({ length: BURST }, async () => {
        const response = await request(target, { dispatcher: agent })
        await response.body.dump()
      }))
    }
  })(), 'the burst growing the RSS by 16 MiB', 60_000)
  const second = releases(await printed(bin, RELEASE_LINE, 2))[1]
  t.ok(second !== undefined && second.rssBefore >= (first?.rssAfter ?? 0) + 8 * 1024 * 1024 && second.rssAfter < second.rssBefore, `the RSS fell again: ${JSON.stringify(second)}`)
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})

test('bin: releaseIdleMemory false keeps the memory, as its start-up summary says', async (t) => {
  const kept = startBin(t, { releaseIdleMemory: false })
  await listeningUrls(kept)
  t.match(kept.stdout(), /idle memory: kept \(releaseIdleMemory is false\)\n/)
  if (CAN_RELEASE) {
    // A bin with the default started after it has given its start-up's heap back: this one,
    // quiet for longer, would have done so before it.
    const released = startBin(t, {})
    await listeningUrls(released)
    await printed(released, RELEASE_LINE)
  }
  kept.child.kill('SIGTERM')
  t.equal(await kept.exited, 0)
  t.notMatch(kept.stdout(), RELEASE_LINE)
})
