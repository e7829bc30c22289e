import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { openTunnel } from './helpers/raw-client'

const run = promisify(execFile)

test('curl trusting only the operator CA (--cacert) sees a valid chain for the destination name through an intercepted tunnel and gets the origin\'s answer', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  for (const host of ['127.0.0.1', 'localhost']) {
    const { stdout } = await run('curl', [
      '--silent', '--show-error', '--fail', '--noproxy', '', '--proxy', proxy.url, '--cacert', pki.operatorCa.certPath,
      '--write-out', '\n%{http_code} %{ssl_verify_result}', `https://${host}:${origin.port}/curl?x=1`
    ], { env: { PATH: process.env.PATH ?? '' } })
    const [body = '', status = ''] = stdout.split('\n')
    t.equal(status, '200 0', `${host}: status 200, certificate verified`)
    t.match(JSON.parse(body), { url: '/curl?x=1', headers: { host: `${host}:${origin.port}` } })
  }
})

test('a Node TLS client trusting only the operator CA authorizes the chain, and the leaf names the CONNECT target, issued by the operator CA', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const tunnel = await openTunnel(proxy.port, `localhost:${origin.port}`)
  t.teardown(() => tunnel.socket.destroy())
  const socket = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert, servername: 'localhost' })
  t.equal(socket.authorized, true)
  const leaf = socket.getPeerCertificate()
  t.equal(leaf.issuer.CN, 'Interception Test Operator CA')
  t.match(leaf.subjectaltname, /DNS:localhost/)
  socket.destroy()
})
