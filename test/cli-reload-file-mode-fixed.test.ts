import { test } from 'tap'
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, printed, runBin } from './helpers/cli-bin'
import { LOOPBACK_ORIGINS } from './helpers/cli-server'

// The bin checks a secret file's permission bits with stat, so a file others may read is refused
// even when the proxy runs as root (which could read it anyway): these tests hold as root too.

const base = { listen: [{ host: '127.0.0.1', port: 0 }], destinations: LOOPBACK_ORIGINS, users: { alice: 'pw-a' }, interception: { hosts: ['never.example'] }, log: { level: 'info' } }
const REFUSED = /"msg":"configuration reload failed, the previous configuration stays: .*permissions 0644 for the secret file .* are too open.*read again within about a second of the next change to it or to a secret file, a chmod included, or at once on SIGHUP/
const RELOADED_ON_CHANGE = /"reason":"file changed".*"msg":"configuration reloaded"/

test('bin reload: a reload refused because a secret file became readable by others says how it is retried, and the chmod that fixes it is picked up without SIGHUP', async (t) => {
  const dir = t.testdir()
  const secretFile = join(dir, 'token')
  writeFileSync(secretFile, 'first-token-value-0001\n')
  chmodSync(secretFile, 0o600)
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({ ...base, secrets: { api: { file: secretFile, hosts: ['secure.example'] } } }))
  const bin = runBin(t, ['--config', file])
  await listeningUrls(bin)

  // Only the mode changes: no write that the watcher could also notice.
  chmodSync(secretFile, 0o644)
  bin.child.kill('SIGHUP')
  const [refusal] = await printed(bin, REFUSED)
  t.match(refusal, /"level":50/)
  t.match(refusal, /"reason":"SIGHUP"/)

  chmodSync(secretFile, 0o600)
  const [reloaded] = await printed(bin, RELOADED_ON_CHANGE)
  t.match(reloaded, /"level":30/, 'the fixed mode alone made the proxy read the file again, and it applied')
  t.notOk(bin.stdout().includes('token-value'), 'no secret value in any line')
})

test('bin reload: a file change refused for a new secret file that others may read is applied once that file is fixed with chmod alone', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify(base))
  const bin = runBin(t, ['--config', file])
  await listeningUrls(bin)

  const secretFile = join(dir, 'new-token')
  writeFileSync(secretFile, 'new-token-value-0003\n')
  chmodSync(secretFile, 0o644)
  writeFileSync(file, JSON.stringify({ ...base, secrets: { api: { file: secretFile, hosts: ['secure.example'] } } }))
  const [refusal] = await printed(bin, REFUSED)
  t.match(refusal, /"reason":"file changed"/, 'the edited file was read on its own')

  chmodSync(secretFile, 0o600)
  await printed(bin, RELOADED_ON_CHANGE)
  t.pass('the secret file the refused configuration named was watched: its chmod made the proxy read the file again, and it applied')
  t.notOk(bin.stdout().includes('token-value'), 'no secret value in any line')
})
