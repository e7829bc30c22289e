import { test } from 'tap'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { request } from 'undici'

// The bin runs from its TypeScript source through the same loader tap uses, so this works on a
// fresh clone before `npm run build`.
const ROOT = join(__dirname, '..')
const TS_LOADER = pathToFileURL(join(ROOT, 'node_modules/@tapjs/typescript/dist/esm/import.mjs')).href
const runBin = (args: string[]) => spawn(process.execPath, ['--import', TS_LOADER, join(ROOT, 'lib/cli/main.ts'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })

test('bin: prints its start-up summary, serves /healthz and exits 0 on SIGTERM', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], users: { alice: 's3cret' }, log: { level: 'warn' } }))
  const child = runBin(['--config', file])
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let stdout = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)
      if (match?.[1] !== undefined && stdout.includes('interception:')) resolve(match[1])
    })
    child.once('exit', (code) => reject(new Error(`exited ${String(code)} before listening: ${stdout}`)))
  })
  t.match(stdout, /authentication: on \(Basic, 1 user\)/)
  t.notMatch(stdout, /s3cret/, 'the summary never prints a password')
  t.match(stdout, /destinations: hosts \*; ports 80, 443; private networks refused/)
  const res = await request(`${url}/healthz`)
  t.equal(res.statusCode, 200)
  await res.body.dump()
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  child.kill('SIGTERM')
  t.equal(await exited, 0)
})

test('bin: a bad configuration exits 1 with the key named on stderr and no stack trace', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ port: 99999 }] }))
  const child = runBin(['--config', file])
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.equal(code, 1)
  t.match(stderr, /forward-proxy: .*proxy\.json: \/listen\/0\/port must be <= 65535/)
  t.notMatch(stderr, /\n\s+at /, 'no stack trace')
})
