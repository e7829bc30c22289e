import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

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

test('a request inside an intercepted tunnel that names no host (HTTP/1.0 without Host) gets 400 with Proxy-Status http_request_error and is never sent anywhere', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const socket = await openInterceptedTls(t, proxy.port, `127.0.0.1:${origin.port}`, { ca: pki.operatorCa.cert })
  const response = await rawTlsExchange(socket, 'GET /x HTTP/1.0\r\n\r\n')
  t.equal(response.status, 400)
  t.match(response.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="no Host or :authority"/i)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
})
