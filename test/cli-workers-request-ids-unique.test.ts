import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, runBin, type BinProcess } from './helpers/cli-bin'
import { getThroughProxy } from './helpers/cli-workers'
import { startOrigin } from './helpers/servers'
import { eventually } from './helpers/eventually'

/** `pid` and `reqId` of every access line the bin's workers have written so far. */
function accessLines (bin: BinProcess): Array<{ pid: number, reqId: string }> {
  return bin.stdout().split('\n').flatMap((line) => {
    if (!line.startsWith('{"level"')) return []
    const entry = JSON.parse(line) as { pid: number, reqId?: string, access?: unknown }
    return entry.access === undefined ? [] : [{ pid: entry.pid, reqId: entry.reqId ?? '' }]
  })
}

test('bin workers: the access lines of two workers never share a reqId (each process numbers its requests under its own prefix)', async (t) => {
  const origin = await startOrigin(t)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    workers: 2,
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'info' }
  }))
  const bin = runBin(t, ['--config', file])
  const [url] = await listeningUrls(bin)
  const proxy = new URL(url ?? '')
  const requests = 8
  // A new connection each: the cluster hands connections to the workers in turn.
  for (let i = 0; i < requests; i++) t.equal((await getThroughProxy(proxy, `http://127.0.0.1:${origin.port}/${i}`)).status, 200)

  await eventually(() => accessLines(bin).length >= requests, 5000).catch(() => {})
  const lines = accessLines(bin)
  t.equal(lines.length, requests, 'one access line per request')
  t.ok(new Set(lines.map((line) => line.pid)).size >= 2, 'both workers served requests')
  t.equal(new Set(lines.map((line) => line.reqId)).size, lines.length, `every reqId is unique: ${lines.map((line) => line.reqId).join(', ')}`)
  t.ok(lines.every((line) => /^req-[0-9a-f]{8}-[0-9a-z]+$/.test(line.reqId)), 'req-<process prefix>-<counter>')
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})
