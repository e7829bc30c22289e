import { test } from 'tap'
import { X509Certificate } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parseConfig, startProxyServer } from './helpers/internals'
import { makeInterceptionPki } from './helpers/interception-pki'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { startHttpsOrigin } from './helpers/https-destination'
import { openInterceptedTls } from './helpers/intercepted-client'
import { freshDataDirectory } from './helpers/development-ca-dir'

test('server: a second start reuses the development CA of the first (same certificate and key, untouched files), so clients keep trusting it', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startHttpsOrigin(t, { cert: pki.originLeaf.cert, key: pki.originLeaf.key })
  const dataDirectory = freshDataDirectory(t)
  const config = parseConfig({
    log: { level: 'silent' },
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    interception: { hosts: ['127.0.0.1'], trustedDestinationCa: pki.destinationCa.certPath },
    dataDirectory
  }, 'test.json', '/')
  const certPath = join(dataDirectory, 'ca.pem')
  const keyPath = join(dataDirectory, 'ca.key')

  const first = await startProxyServer(config)
  t.equal(first.developmentCa?.created, true, 'the first start creates it')
  await first.close()
  const certBefore = readFileSync(certPath)
  const keyBefore = readFileSync(keyPath)
  const mtimes = [statSync(certPath).mtimeMs, statSync(keyPath).mtimeMs]

  const second = await startProxyServer(config)
  t.teardown(() => second.close())
  t.equal(second.developmentCa?.created, false, 'the second start reuses it')
  t.equal(second.developmentCa?.certPath, certPath)
  t.same(readFileSync(certPath), certBefore, 'certificate unchanged')
  t.same(readFileSync(keyPath), keyBefore, 'key unchanged')
  t.same([statSync(certPath).mtimeMs, statSync(keyPath).mtimeMs], mtimes, 'neither file was rewritten')

  const tls = await openInterceptedTls(t, portOf(second.urls[0]), `127.0.0.1:${origin.port}`, { ca: certBefore })
  t.ok(tls.authorized, 'a client trusting the CA of the first start accepts the leaf of the second')
  const issuer = tls.getPeerCertificate(true).issuerCertificate
  t.equal(issuer.fingerprint256, new X509Certificate(certBefore).fingerprint256, 'the leaf is issued by the same CA (same fingerprint)')
  tls.destroy()
})
