import { test } from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { get } from 'node:http'
import { join } from 'node:path'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { startOrigin } from './helpers/servers'

/** The pids of the processes `pid` forked (Linux). */
function childPids (pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
}

/** An absolute-form GET through the proxy on a new connection; resolves with its status. */
function statusThroughProxy (proxy: URL, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: proxy.hostname, port: proxy.port, path: target, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    }).on('error', reject)
  })
}

test('bin workers: a worker that dies is replaced and the proxy keeps serving', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('hello'))
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    workers: 2,
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'warn' }
  }))
  const bin = runBin(t, ['--config', file])
  const [url] = await listeningUrls(bin)
  const [first] = childPids(bin.child.pid ?? 0)
  process.kill(first ?? 0, 'SIGKILL')
  await new Promise<void>((resolve) => {
    const check = (): void => { if (bin.stderr().includes('starting another')) { bin.child.stderr.removeListener('data', check); resolve() } }
    bin.child.stderr.on('data', check)
    check()
  })
  t.match(bin.stderr(), new RegExp(`worker ${String(first)} exited \\(SIGKILL\\); starting another`))
  for (let i = 0; i < 4; i++) {
    t.equal(await statusThroughProxy(new URL(url ?? ''), `http://127.0.0.1:${origin.port}/${i}`), 200)
  }
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})
