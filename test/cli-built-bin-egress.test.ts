// The egress features through the built bin (dist/lib/cli/main.js, what `npm start` and the
// package run), not the TypeScript sources the other CLI tests start: a user's tunnel limit and
// request rate, a placeholder over plain http, a secret injected inside an intercepted tunnel,
// and the metrics listener counting what happened. `npm test` builds dist first (pretest).
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'tap'
import { request } from 'undici'
import { builtFromCurrentSources, listeningUrls, runBuiltBin } from './helpers/cli-bin'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { basic, openTunnel, rawExchange, type OpenTunnel } from './helpers/raw-client'
import { startOrigin } from './helpers/servers'
import { startTcpDestination } from './helpers/tcp-destination'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const SECRET = 'sk-built/5e2a+7c1d=9f3b8a6e'
const PLACEHOLDER = 'PLACEHOLDER_BUILT_API'
const AGENT = { 'Proxy-Authorization': basic('agent', 'agent-pw') }

test('built bin: a user\'s tunnel limit and request rate, a placeholder refused over plain http and injected in an intercepted tunnel, and the metrics of all of it', async (t) => {
  t.ok(builtFromCurrentSources(), 'dist is built from the current sources (npm run build)')
  const pki = await makeInterceptionPki(t)
  const tlsOrigin = await startTlsOrigin(t, pki)
  const plainOrigin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { agent: { password: 'agent-pw', secrets: ['api'], maxConcurrentTunnels: 1, requestsPerMinute: 12 } },
    destinations: LOOPBACK_ORIGINS,
    interception: {
      hosts: ['localhost'],
      ca: { cert: pki.operatorCa.certPath, key: pki.operatorCa.certPath.replace(/\.pem$/, '.key') },
      trustedDestinationCa: pki.destinationCa.certPath
    },
    secrets: { api: { env: 'FFP_TEST_BUILT_TOKEN', hosts: [`127.0.0.1:${tlsOrigin.port}`, `127.0.0.1:${plainOrigin.port}`], placeholder: PLACEHOLDER } },
    metrics: { port: 0 },
    log: { level: 'info' }
  }))
  const bin = runBuiltBin(t, ['--config', file], { FFP_TEST_BUILT_TOKEN: SECRET })
  const [url] = await listeningUrls(bin)
  const port = portOf(url)
  const metricsUrl = /metrics: (http:\/\/\S+\/metrics)/.exec(bin.stdout())?.[1]
  t.ok(metricsUrl, 'the summary names the metrics listener')

  // Every request of the agent's below counts against its requests per minute.
  let connects = 0
  let forwards = 0
  let inTunnel = 0
  const forward = async (path: string, extra = ''): Promise<{ status: number, text: string }> => {
    forwards++
    return await rawExchange(port, `GET http://127.0.0.1:${plainOrigin.port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${plainOrigin.port}\r\nProxy-Authorization: ${AGENT['Proxy-Authorization']}\r\n${extra}Connection: close\r\n\r\n`)
  }
  const tunnel = async (): Promise<OpenTunnel> => {
    connects++
    const opened = await openTunnel(port, `127.0.0.1:${destination.port}`, AGENT)
    t.teardown(() => { opened.socket.destroy() })
    return opened
  }

  // 1: a placeholder over plain http never leaves.
  const plain = await forward('/plain', `X-Key: ${PLACEHOLDER}\r\n`)
  t.equal(plain.status, 403)
  t.match(plain.text, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="credentials are not sent over plain http"/i)
  await expectNothingDialedBefore(t, plainOrigin.accepts, 'nothing reached the plain origin')

  // 2: inside an intercepted tunnel to a granted host the placeholder becomes the value.
  connects++
  const inner = await openInterceptedTls(t, port, `127.0.0.1:${tlsOrigin.port}`, { ca: pki.operatorCa.cert }, AGENT)
  inTunnel++
  const injected = await rawTlsExchange(inner, `GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1:${tlsOrigin.port}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`)
  t.equal(injected.status, 200)
  t.equal(tlsOrigin.requests.at(-1)?.headers.authorization, `Bearer ${SECRET}`, 'the destination got the value')

  // 3: one tunnel at a time for this user (the intercepted one gives its slot back as it closes).
  let held = await tunnel()
  while (held.status === 429) held = await tunnel()
  t.equal(held.status, 200)
  const second = await tunnel()
  t.equal(second.status, 429)
  t.match(second.head, /proxy-status: fastify-forward-proxy; error=connection_limit_reached; details="tunnel limit of this user reached"/i)
  held.socket.destroy()

  // 4: twelve requests a minute (CONNECTs, http:// and requests inside intercepted tunnels):
  // the thirteenth is refused, with the seconds left.
  let answer = await forward('/rate')
  while (answer.status !== 429 && connects + forwards + inTunnel <= 12) answer = await forward('/rate')
  t.equal(answer.status, 429, answer.text.split('\r\n')[0] ?? '')
  t.equal(connects + forwards + inTunnel, 13, `refused at the thirteenth request of the minute (${connects} CONNECTs, ${forwards} http://, ${inTunnel} inside a tunnel)`)
  t.match(answer.text, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="request rate limit of this user reached"/i)
  t.match(answer.text, /\r\nretry-after: \d+\r\n/i)

  // 5: the metrics listener counted it.
  const scrape = await request(metricsUrl ?? '')
  const text = await scrape.body.text()
  t.equal(scrape.statusCode, 200)
  t.match(text, `\nforward_proxy_requests_total{forward_proxy_kind="connect"} ${connects}\n`, 'every CONNECT')
  t.match(text, `\nforward_proxy_requests_total{forward_proxy_kind="forward"} ${forwards}\n`, 'every http:// request')
  t.match(text, `\nforward_proxy_requests_total{forward_proxy_kind="intercepted"} ${inTunnel}\n`, 'the request inside the intercepted tunnel')
  t.notOk(text.includes(SECRET), 'no value in the metrics')

  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  t.notOk(bin.stdout().includes(SECRET) || bin.stderr().includes(SECRET), 'no value in any output')
})
