import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { childPids, getThroughProxy } from './helpers/cli-workers'
import { listeningUrls, runBin, type BinProcess } from './helpers/cli-bin'
import { eventually } from './helpers/eventually'
import { startOrigin } from './helpers/servers'

/** `"workers": 2` on 127.0.0.1:0, loopback destinations allowed, log level warn, `via` as given. */
function workersConfig (via: string): string {
  return JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    workers: 2,
    via,
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'warn' }
  })
}

function count (text: string, part: string): number {
  return text.split(part).length - 1
}

async function startWorkers (t: Parameters<typeof runBin>[0], file: string): Promise<{ bin: BinProcess, url: string }> {
  writeFileSync(file, workersConfig('proxy-a'))
  const bin = runBin(t, ['--config', file])
  const [url] = await listeningUrls(bin)
  if (url === undefined) throw new Error('no listener')
  return { bin, url }
}

test('bin workers: a worker started after an edit that needs a restart serves what the others serve (the settings the server started with), and says the edit waits for a restart', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('hello'))
  const file = join(t.testdir(), 'proxy.json')
  const { bin, url } = await startWorkers(t, file)
  writeFileSync(file, workersConfig('proxy-b'))
  bin.child.kill('SIGHUP')
  const warning = 'configuration key \\"via\\" changed: restart the proxy to apply it'
  await eventually(() => count(bin.stdout(), warning) === 2, 10_000)

  const [first] = childPids(bin.child.pid ?? 0)
  process.kill(first ?? 0, 'SIGKILL')
  // The replacement says so once it listens.
  await eventually(() => count(bin.stdout(), warning) === 3, 10_000)
  for (let i = 0; i < 6; i++) {
    const answer = await getThroughProxy(new URL(url), `http://127.0.0.1:${origin.port}/${i}`)
    t.equal(answer.via, '1.1 proxy-a', `request ${i}: the pseudonym the server started with`)
  }
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})

test('bin workers: a replacement that cannot start (the file no longer loads) is tried again while others serve; when no worker is left the server exits 1', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('hello'))
  const file = join(t.testdir(), 'proxy.json')
  const { bin, url } = await startWorkers(t, file)
  writeFileSync(file, '{ "listen": ')
  const [first, second] = childPids(bin.child.pid ?? 0)
  process.kill(first ?? 0, 'SIGKILL')
  await eventually(() => bin.stderr().includes('a replacement worker could not start; trying again in 1 s (1 of 2 workers serving)'), 10_000)
  t.equal((await getThroughProxy(new URL(url), `http://127.0.0.1:${origin.port}/`)).status, 200, 'the other worker serves')
  await eventually(() => bin.stderr().includes('trying again in 2 s'), 10_000)
  t.pass('tried again')

  process.kill(second ?? 0, 'SIGKILL')
  t.equal(await bin.exited, 1, 'no worker left: exit code 1, for a supervisor to see')
  t.match(bin.stderr(), /no worker is left and none can start; stopping/)
})
