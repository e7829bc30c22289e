import { test } from 'tap'
import { readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { parseConfig } from './helpers/internals'
import { childPids, getThroughProxy, startTwoWorkerBin } from './helpers/cli-workers'
import { startOrigin } from './helpers/servers'

/**
 * The pid among `pids` that owns the TCP connection from local port `port` to remote port
 * `remotePort` (Linux /proc). The remote port is matched too, and closed entries (inode 0)
 * skipped: the same local port can serve a connection to another destination at the same time
 * (tests run in parallel), listed before the one looked for.
 */
function ownerOfConnection (port: number, remotePort: number, pids: number[]): number | undefined {
  const portOf = (address: string | undefined): number => parseInt((address ?? '').split(':')[1] ?? '', 16)
  const line = readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)
    .map((row) => row.trim().split(/\s+/))
    .find((columns) => portOf(columns[1]) === port && portOf(columns[2]) === remotePort && columns[9] !== '0')
  const inode = line?.[9]
  if (inode === undefined) return undefined
  return pids.find((pid) => readdirSync(`/proc/${pid}/fd`).some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`
    } catch {
      return false
    }
  }))
}

test('bin workers: with "workers": 2 two processes share the listener, both forward requests, SIGTERM closes all and exits 0', async (t) => {
  let workers: number[] = []
  const forwarders = new Set<number | undefined>()
  const origin = await startOrigin(t, (req, res) => {
    // Which worker holds the other end of this connection, looked up while the request is open
    // (an idle keep-alive connection may be closed by the time the test looks later).
    forwarders.add(ownerOfConnection(req.socket.remotePort ?? 0, req.socket.localPort ?? 0, workers))
    res.end('hello')
  })
  const { bin, url } = await startTwoWorkerBin(t)
  t.ok(url, 'the summary names the listener')
  t.match(bin.stdout(), /workers: 2 processes \(Node cluster\)/)
  t.equal(bin.stdout().match(/listening on/g)?.length, 1, 'the summary is printed once, by the first process')
  workers = childPids(bin.child.pid ?? 0)
  t.equal(workers.length, 2, 'two worker processes')

  for (let i = 0; i < 6; i++) {
    const answer = await getThroughProxy(new URL(url ?? ''), `http://127.0.0.1:${origin.port}/${i}`)
    t.equal(answer.status, 200)
    t.equal(answer.body, 'hello')
    t.match(answer.via ?? '', /1\.1 fastify-forward-proxy/)
  }
  t.same([...forwarders].sort(), [...workers].sort(), 'both workers forwarded requests')

  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  t.same(workers.filter((pid) => { try { process.kill(pid, 0); return true } catch { return false } }), [], 'no worker is left running')
})

test('bin workers: each worker runs with the Node options the first process was started with (the young-generation cap `npm start` and the image pass reaches every worker)', async (t) => {
  const { bin } = await startTwoWorkerBin(t, ['--max-semi-space-size=8'])
  const workers = childPids(bin.child.pid ?? 0)
  t.equal(workers.length, 2, 'two worker processes')
  for (const pid of workers) {
    t.ok(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('--max-semi-space-size=8'), `worker ${pid} has the option`)
  }
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})

test('config: workers must be an integer from 1 to 64, default 1', async (t) => {
  t.equal(parseConfig({}, 'proxy.json', '/srv').workers, 1)
  t.equal(parseConfig({ workers: 4 }, 'proxy.json', '/srv').workers, 4)
  t.throws(() => parseConfig({ workers: 0 }, 'proxy.json', '/srv'), { name: 'ConfigError', message: /^proxy\.json: \/workers must be an integer from 1 to 64/ })
  t.throws(() => parseConfig({ workers: 1.5 }, 'proxy.json', '/srv'), { name: 'ConfigError', message: /^proxy\.json: \/workers must be an integer/ })
})
