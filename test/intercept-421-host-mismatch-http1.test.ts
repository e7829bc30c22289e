import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'
import { capturedLog } from './helpers/captured-log'
import { installMetrics } from './helpers/metric-reader'
import { basic } from './helpers/raw-client'

test('inside an intercepted HTTP/1.1 tunnel a Host naming another host or port gets 421 with Proxy-Status and is never sent anywhere; equivalent spellings of the CONNECT target are forwarded', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const target = `127.0.0.1:${origin.port}`

  for (const host of ['other.example', `other.example:${origin.port}`, '127.0.0.1', `127.0.0.1:${origin.port + 1}`, `localhost:${origin.port}`]) {
    const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
    const response = await rawTlsExchange(socket, `GET /x HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
    t.equal(response.status, 421, `Host: ${host}`)
    t.match(response.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="Host does not match the CONNECT target"/i)
  }
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')

  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const response = await rawTlsExchange(socket, `GET /same HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(response.status, 200)
  t.equal(origin.requests.length, 1)
})

test('Host comparison normalizes case, a trailing dot and the default port 443; a misdirected request is refused before the app hooks run (a hook answering 204 never sees it)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { destinations: { allowedHosts: ['api.example'], allowedPorts: [443] } },
    interception: interceptAll(pki),
    setup (app) {
      // Answer inside the tunnel from a hook: api.example does not exist, and only the Host check matters here.
      app.addHook('onRequest', async (request, reply) => {
        if (request.interception !== null) return await reply.code(204).send()
      })
    }
  })
  for (const host of ['api.example', 'API.Example', 'api.example.', 'api.example:443']) {
    const socket = await openInterceptedTls(t, proxy.port, 'api.example:443', { ca: pki.operatorCa.cert })
    const response = await rawTlsExchange(socket, `GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
    t.equal(response.status, 204, `Host: ${host} reaches the hooks`)
  }
  for (const host of ['api.example:8443', 'www.api.example']) {
    const socket = await openInterceptedTls(t, proxy.port, 'api.example:443', { ca: pki.operatorCa.cert })
    const response = await rawTlsExchange(socket, `GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
    t.equal(response.status, 421, `Host: ${host}`)
  }
})

test('a request inside an intercepted tunnel that names no host (HTTP/1.0 or HTTP/1.1 without Host) gets 400 with Proxy-Status http_request_error and is never sent anywhere', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  for (const request of ['GET /x HTTP/1.0\r\n\r\n', 'GET /x HTTP/1.1\r\nConnection: close\r\n\r\n']) {
    const socket = await openInterceptedTls(t, proxy.port, `127.0.0.1:${origin.port}`, { ca: pki.operatorCa.cert })
    const response = await rawTlsExchange(socket, request)
    t.equal(response.status, 400, request.split('\r\n')[0] ?? '')
    t.match(response.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="no Host or :authority"/i)
  }
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
})

test('refusals inside an intercepted tunnel that no hook sees (421 another Host, 400 absolute-form, 400 a CONNECT inside) each get a deny access line naming the tunnel\'s user, client and destination, and a refused/bad_request outcome', async (t) => {
  const installed = installMetrics(t)
  const log = capturedLog()
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    server: { logger: log.logger },
    proxy: { auth: { users: { alice: 's3cret' } } },
    interception: interceptAll(pki)
  })
  const target = `127.0.0.1:${origin.port}`
  const inside = [
    'GET /x HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n',
    `GET https://${target}/abs HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`,
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`
  ]
  const statuses: number[] = []
  for (const request of inside) {
    const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert }, { 'Proxy-Authorization': basic('alice', 's3cret') })
    statuses.push((await rawTlsExchange(socket, request)).status)
  }
  t.same(statuses, [421, 400, 400])
  const lines = log.access().filter((access) => access.kind === 'intercepted')
  t.equal(lines.length, 3, 'one line each')
  for (const [index, line] of lines.entries()) {
    t.match(line, { kind: 'intercepted', user: 'alice', client: '127.0.0.1', destination: target, intercepted: true, decision: 'deny', rule: 'request', status: statuses[index], errorType: 'http_request_error' })
    t.type(line.reason, 'string')
  }
  t.match(await installed.sums('forward_proxy.request.outcomes'), { '{"forward_proxy.kind":"intercepted","forward_proxy.outcome":"refused","forward_proxy.reason":"bad_request"}': 3 })
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
})
