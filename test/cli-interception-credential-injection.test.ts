import { test } from 'tap'
import { execFile } from 'node:child_process'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { promisify } from 'node:util'
import { makeInterceptionPki } from './helpers/interception-pki'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { startOrigin } from './helpers/servers'

const curl = promisify(execFile)
const TOKEN = 'Bearer config-only-token'

test('server: credential injection from the configuration file alone (interception.hosts + ca + trustedDestinationCa + headers), checked with curl trusting only the operator CA', async (t) => {
  const pki = await makeInterceptionPki(t)
  const seen: Array<Record<string, string | string[] | undefined>> = []
  const origin = createServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key }, (req, res) => {
    seen.push(req.headers)
    res.setHeader('server', 'origin/1.0')
    res.end('secret page')
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  const originPort = (origin.address() as AddressInfo).port
  const plainOrigin = await startOrigin(t)

  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { alice: 's3cret' },
    destinations: LOOPBACK_ORIGINS,
    interception: {
      hosts: ['127.0.0.1'],
      ca: { cert: pki.operatorCa.certPath, key: pki.operatorCa.certPath.replace(/\.pem$/, '.key') },
      trustedDestinationCa: pki.destinationCa.certPath
    },
    headers: [{ hosts: ['127.0.0.1'], set: { Authorization: TOKEN }, remove: ['Cookie'], setResponse: { 'X-Proxy': 'yes' }, removeResponse: ['Server'] }]
  })
  const proxy = `http://alice:s3cret@127.0.0.1:${portOf(server.urls[0])}`

  const intercepted = await curl('curl', ['-sS', '-i', '--proxy', proxy, '--cacert', pki.operatorCa.certPath,
    '-H', 'Cookie: session=abc', `https://127.0.0.1:${originPort}/v1/me`])
  t.match(intercepted.stdout, /^HTTP\/1\.1 200/, 'curl accepted the leaf the proxy minted from the operator CA')
  t.match(intercepted.stdout, /\r\nx-proxy: yes\r\n/i, 'setResponse applied')
  t.notMatch(intercepted.stdout, /origin\/1\.0/, 'removeResponse applied')
  t.match(intercepted.stdout, /secret page$/)
  t.equal(seen.length, 1)
  t.equal(seen[0]?.authorization, TOKEN, 'the credential was injected inside the decrypted tunnel')
  t.equal(seen[0]?.cookie, undefined, 'the cookie was removed')
  t.equal(seen[0]?.['proxy-authorization'], undefined, 'proxy credentials never reach the destination')

  const forwarded = await curl('curl', ['-sS', '--proxy', proxy, `http://127.0.0.1:${plainOrigin.port}/plain`])
  t.match(forwarded.stdout, /"url":"\/plain"/)
  t.equal(plainOrigin.requests[0]?.headers.authorization, TOKEN, 'header rules apply to http:// forwarding too')
})

test('server: a tunnel to a host not in interception.hosts stays opaque (the client sees the origin\'s own certificate)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = createServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key }, (req, res) => res.end(`auth=${req.headers.authorization ?? 'none'}`))
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    interception: { hosts: ['api.example.com'], ca: { cert: pki.operatorCa.certPath, key: pki.operatorCa.certPath.replace(/\.pem$/, '.key') } },
    headers: [{ hosts: ['127.0.0.1'], set: { Authorization: TOKEN } }]
  })
  const proxy = `http://127.0.0.1:${portOf(server.urls[0])}`
  const opaque = await curl('curl', ['-sS', '--proxy', proxy, '--cacert', pki.destinationCa.certPath, `https://127.0.0.1:${(origin.address() as AddressInfo).port}/`])
  t.equal(opaque.stdout, 'auth=none', 'opaque: the destination CA validates end to end and nothing is injected')
})
