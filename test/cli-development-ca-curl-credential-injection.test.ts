import { test } from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { portOf } from './helpers/cli-server'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startHttpsOrigin } from './helpers/https-destination'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const curl = promisify(execFile)
const TOKEN = 'Bearer development-ca-token'

test('bin: curl trusting only the development CA path the server printed gets through an intercepted tunnel, and a header rule injects the credential', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startHttpsOrigin(t, { cert: pki.originLeaf.cert, key: pki.originLeaf.key })
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { alice: 's3cret' },
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
    interception: { hosts: ['127.0.0.1'], trustedDestinationCa: pki.destinationCa.certPath },
    headers: [{ hosts: ['127.0.0.1'], set: { Authorization: TOKEN }, remove: ['Cookie'] }],
    log: { level: 'warn' }
  }))
  const bin = runBin(t, ['--config', file])
  const urls = await listeningUrls(bin)
  const printed = /--cacert (\S+)/.exec(bin.stdout())?.[1]
  t.ok(printed, 'the summary prints the CA path for curl')

  const proxy = `http://alice:s3cret@127.0.0.1:${portOf(urls[0])}`
  const result = await curl('curl', ['-sS', '-i', '--proxy', proxy, '--cacert', printed ?? '', '-H', 'Cookie: session=abc', `https://127.0.0.1:${origin.port}/v1/me`])
  t.match(result.stdout, /^HTTP\/1\.1 200/, 'curl accepted the leaf minted from the development CA')
  t.match(result.stdout, /ok \/v1\/me$/)
  t.equal(origin.requests.length, 1)
  t.equal(origin.requests[0]?.headers.authorization, TOKEN, 'the credential was injected inside the decrypted tunnel')
  t.equal(origin.requests[0]?.headers.cookie, undefined, 'the cookie was removed')
  t.equal(origin.requests[0]?.headers['proxy-authorization'], undefined)
  const dialedBefore = origin.accepts.accepted

  const untrusted = await curl('curl', ['-sS', '--proxy', proxy, '--cacert', pki.destinationCa.certPath, `https://127.0.0.1:${origin.port}/v1/me`]).then(() => undefined, (error: { stderr: string }) => error)
  t.match(untrusted?.stderr, /SSL certificate problem|certificate verify failed/, 'the leaf is refused by a client that does not trust the development CA')
  t.equal(origin.requests.length, 1)
  await expectNothingDialedBefore(t, origin.accepts, 'and nothing reached the origin', { after: dialedBefore })
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})
