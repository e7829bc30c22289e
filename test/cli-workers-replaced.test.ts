import { test } from 'tap'
import { childPids, getThroughProxy, startTwoWorkerBin } from './helpers/cli-workers'
import { startOrigin } from './helpers/servers'

test('bin workers: a worker that dies is replaced and the proxy keeps serving', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('hello'))
  const { bin, url } = await startTwoWorkerBin(t)
  const [first] = childPids(bin.child.pid ?? 0)
  process.kill(first ?? 0, 'SIGKILL')
  await new Promise<void>((resolve) => {
    const check = (): void => { if (bin.stderr().includes('starting another')) { bin.child.stderr.removeListener('data', check); resolve() } }
    bin.child.stderr.on('data', check)
    check()
  })
  t.match(bin.stderr(), new RegExp(`worker ${String(first)} exited \\(SIGKILL\\); starting another`))
  for (let i = 0; i < 4; i++) {
    t.equal((await getThroughProxy(new URL(url ?? ''), `http://127.0.0.1:${origin.port}/${i}`)).status, 200)
  }
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})
