import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'undici'
import { absoluteFormAgent } from './helpers/forward-client'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { startOrigin } from './helpers/servers'
import { within } from './helpers/within'
import { childEnv, TS_LOADER } from './helpers/child-node'
import { spawn } from 'node:child_process'

const REQUESTS = 300

test('bin: access lines written in batches stay whole and in order, and none is lost when the server stops right after a burst', async (t) => {
  const origin = await startOrigin(t)
  const dir = t.testdir()
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.0/8'] }
  }))
  const bin = runBin(t, ['--config', file])
  const [url] = await listeningUrls(bin)
  const dispatcher = absoluteFormAgent(t, url ?? '')
  const statuses = await Promise.all(Array.from({ length: REQUESTS }, async (_, index) => {
    const response = await request(`http://127.0.0.1:${origin.port}/burst/${index}`, { dispatcher })
    await response.body.text()
    return response.statusCode
  }))
  t.ok(statuses.every((status) => status === 200), 'every request was answered')
  // Stopped at once: lines of the last turns must still be written before the process exits.
  bin.child.kill('SIGTERM')
  t.equal(await within(bin.exited, 'the exit after SIGTERM'), 0)

  const lines = bin.stdout().split('\n').filter((line) => line.startsWith('{'))
  const entries = lines.map((line) => JSON.parse(line) as { msg?: string, access?: { destination: string, status: number } })
  t.pass('every JSON line is whole (each one parsed)')
  const access = entries.filter((entry) => entry.access !== undefined)
  t.equal(access.length, REQUESTS, 'one access line per request, none lost')
  t.ok(access.every((entry) => entry.access?.status === 200))
  const shuttingDown = entries.findIndex((entry) => entry.msg === 'shutting down')
  const lastAccess = entries.findLastIndex((entry) => entry.access !== undefined)
  t.ok(shuttingDown > lastAccess, 'the shutdown line follows every access line')
})

test('bin log stream: lines written in the same turn as process.exit() still reach stdout', async (t) => {
  const script = [
    `const { createBatchedLogStream } = require(${JSON.stringify(join(__dirname, 'helpers', 'internals.ts'))})`,
    'const stream = createBatchedLogStream(process.stdout)',
    'for (let i = 0; i < 3; i++) stream.write("line " + i + "\\n")',
    'process.exit(3)'
  ].join('\n')
  const child = spawn(process.execPath, ['--import', TS_LOADER, '-e', script], { env: childEnv() })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  const code = await within(new Promise<number | null>((resolve) => child.once('close', (exitCode) => resolve(exitCode))), 'the child\'s exit')
  t.equal(code, 3)
  t.equal(out, 'line 0\nline 1\nline 2\n', 'the pending lines were written at exit, in order')
})
