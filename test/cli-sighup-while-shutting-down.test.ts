import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ServerResponse } from 'node:http'
import { getThroughProxy } from './helpers/cli-workers'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { eventually } from './helpers/eventually'
import { startOrigin } from './helpers/servers'

test('bin: a SIGHUP while shutting down (a log rotation, a reload hook) is ignored: the request in flight finishes and the server exits 0', async (t) => {
  const held: ServerResponse[] = []
  const origin = await startOrigin(t, (_req, res) => { held.push(res) })
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'info' }
  }))
  const bin = runBin(t, ['--config', file])
  const [url] = await listeningUrls(bin)
  const inFlight = getThroughProxy(new URL(url ?? ''), `http://127.0.0.1:${origin.port}/slow`)
  await eventually(() => held.length === 1)
  bin.child.kill('SIGTERM')
  await eventually(() => bin.stdout().includes('shutting down'))
  bin.child.kill('SIGHUP')
  await eventually(() => bin.stdout().includes('SIGHUP ignored: shutting down'))
  held[0]?.end('done')
  const answer = await inFlight
  t.equal(answer.status, 200)
  t.equal(answer.body, 'done')
  t.equal(await bin.exited, 0)
})
