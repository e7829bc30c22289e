import { test } from 'tap'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openHttp2Tunnel } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { connectHttp2Listener } from './helpers/cli-http2'
import { basic } from './helpers/raw-client'

test('bin: an HTTP/2 listener is announced as HTTP/1.1 + HTTP/2; SIGTERM with an open HTTP/2 tunnel and an idle HTTP/2 session exits 0 promptly', async (t) => {
  const destination = await startTcpDestination(t)
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }, { host: '127.0.0.1', port: 0 }],
    users: { alice: 's3cret' },
    limits: { tunnelIdleTimeout: 600_000 },
    destinations: { allowedPorts: [destination.port], allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'warn' }
  }))
  const bin = runBin(t, ['--config', file])
  const [url] = await listeningUrls(bin)
  t.match(bin.stdout(), /listening on https:\/\/127\.0\.0\.1:\d+ \(HTTP\/1\.1 \+ HTTP\/2\)\n/)
  t.match(bin.stdout(), /listening on http:\/\/127\.0\.0\.1:\d+ \(HTTP\/1\.1\)\n/)

  const tunnelSession = await connectHttp2Listener(t, url, tls.cert)
  const idleSession = await connectHttp2Listener(t, url, tls.cert)
  const tunnel = await openHttp2Tunnel(tunnelSession, `127.0.0.1:${destination.port}`, { 'proxy-authorization': basic('alice', 's3cret') })
  t.equal(tunnel.status, 200)
  const sessionsClosed = [once(tunnelSession, 'close'), once(idleSession, 'close')]
  // The shutdown grace period is 10 s and an idle session lasts 72 s: exiting within 5 s shows
  // that neither was waited for.
  const started = Date.now()
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  t.ok(Date.now() - started < 5000, `exited after ${Date.now() - started} ms`)
  await Promise.all(sessionsClosed)
  t.equal(bin.stderr(), '')
})
