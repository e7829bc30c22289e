import { test } from 'tap'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startOrigin } from './helpers/servers'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'

const curl = promisify(execFile)

test('server: curl uses an "http2": true listener as an HTTPS proxy (HTTP/1.1 over TLS): tunnel and forwarding with credentials, 407 without', async (t) => {
  const origin = await startOrigin(t)
  const dir = t.testdir()
  await makeSelfSignedCertificate(dir)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }],
    users: { alice: 's3cret' },
    destinations: LOOPBACK_ORIGINS
  }, dir)
  const proxy = (user: string): string => `https://${user}127.0.0.1:${portOf(server.urls[0])}`
  const trust = ['--proxy-cacert', join(dir, 'cert.pem')]
  const tunnelled = await curl('curl', ['-sS', ...trust, '-p', '-x', proxy('alice:s3cret@'), `http://127.0.0.1:${origin.port}/tunnel`])
  t.match(tunnelled.stdout, /"url":"\/tunnel"/)
  const forwarded = await curl('curl', ['-sS', ...trust, '-x', proxy('alice:s3cret@'), `http://127.0.0.1:${origin.port}/forwarded`])
  t.match(forwarded.stdout, /"url":"\/forwarded"/)
  const anonymous = await curl('curl', ['-sS', ...trust, '-o', '/dev/null', '-w', '%{http_code}', '-x', proxy(''), `http://127.0.0.1:${origin.port}/`])
  t.equal(anonymous.stdout, '407')
  t.equal(origin.requests.length, 2)
})
