import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runBin } from './helpers/cli-bin'

const NO_STACK = /\n\s+at /

test('bin: a bad configuration exits 1 with the key and the expectation on stderr, no stack trace', async (t) => {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ port: 99999 }] }))
  const bin = runBin(t, ['--config', file])
  t.equal(await bin.exited, 1)
  t.match(bin.stderr(), /^forward-proxy: .*proxy\.json: \/listen\/0\/port must be an integer from 0 to 65535\n$/)
  t.notMatch(bin.stderr(), NO_STACK)
  t.equal(bin.stdout(), '', 'nothing started, nothing printed')
})
