// The bin's reload revokes at once, inside tunnels already open: an agent removed from the file
// (or whose grant is narrowed) gets 403 for the next request of its open intercepted HTTP/2
// tunnel, which then closes; a file that would open the proxy is refused whole.
import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { interceptionConfig, makeInterceptionPki } from './helpers/interception-pki'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { listeningUrls, printed, runBin } from './helpers/cli-bin'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls } from './helpers/intercepted-client'
import { basic, rawExchange } from './helpers/raw-client'

const VALUE = 'REAL1/ab+cd!ef=gh'
const PLACEHOLDER = 'PLACEHOLDER_ONE'

test('bin reload: removing an agent revokes its open intercepted HTTP/2 tunnel at the next request; users: {} is refused whole', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const file = join(t.testdir(), 'proxy.json')
  const config = (users: Record<string, unknown>): string => JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    interception: interceptionConfig(pki, ['127.0.0.1']),
    users,
    secrets: { one: { env: 'FFP_TEST_ONE', hosts: [`127.0.0.1:${origin.port}`], placeholder: PLACEHOLDER } },
    log: { level: 'info' }
  })
  writeFileSync(file, config({ agent: { password: 'pw-a', secrets: ['one'] }, other: 'pw-o' }))
  const bin = runBin(t, ['--config', file], { FFP_TEST_ONE: VALUE })
  const port = portOf((await listeningUrls(bin))[0])
  const authority = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, port, authority, { ca: pki.operatorCa.cert, alpn: ['h2'] }, { 'Proxy-Authorization': basic('agent', 'pw-a') })
  const session = await http2OverTls(t, socket, authority)
  const withPlaceholder = (path: string): Record<string, string> => ({ ':path': path, authorization: `Bearer ${PLACEHOLDER}` })
  t.equal((await http2Request(session, withPlaceholder('/before'))).status, 200)
  t.equal(origin.requests[0]?.headers.authorization, `Bearer ${VALUE}`)

  // A reload that would open the proxy changes nothing: the agent's tunnel keeps working.
  writeFileSync(file, config({}))
  bin.child.kill('SIGHUP')
  await printed(bin, /configuration reload failed, the previous configuration stays: \/users: a reload cannot remove every user/, 1)
  t.equal((await http2Request(session, withPlaceholder('/still'))).status, 200, 'nothing of the refused file applied')
  const anonymous = await rawExchange(port, `GET http://127.0.0.1:${origin.port}/anonymous HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.match(anonymous.text, /^HTTP\/1\.1 407 /, 'the proxy did not open')

  writeFileSync(file, config({ other: 'pw-o' }))
  bin.child.kill('SIGHUP')
  await printed(bin, /"msg":"configuration reloaded"/, 1)
  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()))
  const after = await http2Request(session, withPlaceholder('/after'))
  t.equal(after.status, 403)
  t.match(after.headers['proxy-status'], /details="tunnel user no longer allowed"/)
  await closed
  t.notOk(after.body.includes(VALUE))
  // A probe after the refusal: had /after left the proxy, the origin would have seen it first.
  const probeSocket = await openInterceptedTls(t, port, authority, { ca: pki.operatorCa.cert, alpn: ['h2'] }, { 'Proxy-Authorization': basic('other', 'pw-o') })
  t.equal((await http2Request(await http2OverTls(t, probeSocket, authority), { ':path': '/probe' })).status, 200)
  t.same(origin.requests.map((seen) => seen.url), ['/before', '/still', '/probe'], 'the refused request never reached the origin')
})
