import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'undici'
import { listeningUrls, runBin } from './helpers/cli-bin'

test('bin: --config starts the listeners of the file, the summary counts users without passwords, SIGTERM exits 0', async (t) => {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0 }],
    users: { alice: 's3cret', bob: 'hunter2' },
    destinations: { deniedHosts: ['*.internal.example'], allowedPorts: '*', allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'warn' }
  }))
  const bin = runBin(t, ['--config', file])
  const urls = await listeningUrls(bin)
  t.equal(urls.length, 2)
  t.match(bin.stdout(), /authentication: on \(Basic, 2 users\)/)
  t.notMatch(bin.stdout(), /s3cret|hunter2/, 'the summary never prints a password')
  t.match(bin.stdout(), /destinations: hosts \*; denied hosts \*\.internal\.example; any port; private networks refused except 127\.0\.0\.1\/32/)
  for (const url of urls) {
    const res = await request(`${url}/healthz`)
    t.equal(res.statusCode, 200, `${url}/healthz`)
    await res.body.dump()
  }
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  t.notMatch(bin.stdout(), /"level":30/, 'log.level warn keeps info logs out')
})
