import { test } from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { portOf } from './helpers/cli-server'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { eventually } from './helpers/eventually'

test('bin: a 502 tls_certificate_error for a destination whose CA is not trusted logs a hint naming interception.trustedDestinationCa; the client never sees it', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const dir = t.testdir()
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
    interception: { hosts: ['127.0.0.1'] },
    dataDirectory: 'state'
  }))
  const bin = runBin(t, ['--config', file])
  const urls = await listeningUrls(bin)
  const tls = await openInterceptedTls(t, portOf(urls[0]), `127.0.0.1:${origin.port}`, { ca: readFileSync(join(dir, 'state', 'ca.pem')) })
  const response = await rawTlsExchange(tls, `GET /private HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(response.status, 502)
  t.match(response.head, /proxy-status: fastify-forward-proxy; error=tls_certificate_error; details="UNABLE_TO_VERIFY_LEAF_SIGNATURE"/i)
  t.notMatch(response.head + response.body, /trustedDestinationCa/, 'the hint is for the operator only')
  t.equal(origin.requests.length, 0, 'nothing reached the untrusted destination')

  let logged: { proxyStatus?: string, hint?: string } | undefined
  await eventually(() => {
    logged = bin.stdout().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { proxyStatus?: string, hint?: string })
      .find((entry) => entry.proxyStatus === 'tls_certificate_error')
    return logged !== undefined
  }, 10_000)
  t.match(logged?.hint, /"interception\.trustedDestinationCa"/, 'the log line says where to trust the destination\'s CA')
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})
