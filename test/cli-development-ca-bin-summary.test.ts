import { test } from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { portOf } from './helpers/cli-server'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startHttpsOrigin } from './helpers/https-destination'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { pemBody } from './helpers/development-ca-dir'
import { eventually } from './helpers/eventually'

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')

test('bin: with a development CA the summary warns it is not for production, prints its path and one trust line per client; the key never appears in the output, even at log level trace', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startHttpsOrigin(t, { cert: pki.originLeaf.cert, key: pki.originLeaf.key })
  const dir = t.testdir()
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
    interception: { hosts: ['127.0.0.1'], trustedDestinationCa: pki.destinationCa.certPath },
    dataDirectory: 'state',
    log: { level: 'trace' }
  }))
  const certPath = join(dir, 'state', 'ca.pem')
  const keyPath = join(dir, 'state', 'ca.key')

  for (const start of ['created now', 'reused']) {
    const bin = runBin(t, ['--config', file])
    const urls = await listeningUrls(bin)
    const summary = bin.stdout()
    t.match(summary, new RegExp(`interception: 127\\.0\\.0\\.1 \\(leaves signed by ${escape(certPath)}; clients must trust that CA\\)`))
    t.match(summary, new RegExp(`WARNING: TLS interception uses a DEVELOPMENT CA, ${start} \\(valid until \\d{4}-\\d\\d-\\d\\d\\)\\. Not for production`), `${start}: the warning`)
    t.match(summary, /secret store or hardware module/, 'production guidance: the key in a secret store or HSM')
    t.match(summary, /dedicated CA/, 'a dedicated CA')
    t.match(summary, /intercept only the destinations needed, and inform the people whose traffic is decrypted/)
    t.match(summary, new RegExp(`development CA certificate: ${escape(certPath)}\\n`))
    t.match(summary, new RegExp(`curl --proxy <proxy URL> --cacert ${escape(certPath)} `), 'curl')
    t.match(summary, new RegExp(`NODE_EXTRA_CA_CERTS=${escape(certPath)}\\n`), 'Node.js')
    t.match(summary, new RegExp(`SSL_CERT_FILE=${escape(certPath)}\\n`), 'OpenSSL-based clients')
    t.match(summary, new RegExp(`REQUESTS_CA_BUNDLE=${escape(certPath)}\\n`), 'Python requests')
    // pino's line and the summary reach the pipe in either order; wait for the warning line.
    await eventually(() => /"level":40,.*"caCert":".*ca\.pem".*DEVELOPMENT CA/.test(bin.stdout()), 10_000)
    t.pass('logged as a warning too')

    // A request through the intercepted tunnel, so the logs of a handshake and a request are in the output.
    const tls = await openInterceptedTls(t, portOf(urls[0]), `127.0.0.1:${origin.port}`, { ca: readFileSync(certPath) })
    const response = await rawTlsExchange(tls, `GET /logged HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
    t.equal(response.status, 200, `${start}: intercepted`)
    bin.child.kill('SIGTERM')
    t.equal(await bin.exited, 0)

    const output = bin.stdout() + bin.stderr()
    const body = pemBody(readFileSync(keyPath))
    t.ok(body.length > 100, 'the key body checked for is the real one')
    t.notOk(output.includes(body), `${start}: the key's base64 body is not in stdout or stderr`)
    for (let i = 0; i + 24 <= body.length; i += 24) {
      if (output.includes(body.slice(i, i + 24))) t.fail(`${start}: a piece of the key (offset ${i}) is in the output`)
    }
    t.notMatch(output, /PRIVATE KEY/, `${start}: no PEM key block in the output`)
  }
})
