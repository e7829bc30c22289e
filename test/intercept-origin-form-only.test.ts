import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { eventually } from './helpers/eventually'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('inside an intercepted tunnel absolute-form, asterisk-form and CONNECT requests get 400 and are never forwarded', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const target = `127.0.0.1:${origin.port}`
  const requests = [
    `GET https://${target}/abs HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`,
    `GET http://${target}/abs HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`,
    `OPTIONS * HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`,
    `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`
  ]
  for (const request of requests) {
    const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
    const response = await rawTlsExchange(socket, request)
    t.equal(response.status, 400, request.split('\r\n')[0] ?? '')
    t.match(response.head, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error/i)
  }
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.pass('every tunnel gave its slot back once its connection closed; a CONNECT inside held none of its own')
})
