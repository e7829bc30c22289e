import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a request transform that throws inside an intercepted tunnel gets 500 proxy_internal_error from the proxy, no stack or secret, and nothing reaches the origin', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: {
      certificateProvider: staticProvider(pki),
      selector: { shouldIntercept: () => true },
      transforms: [{ transformRequest () { throw new Error('vault unreachable: token=s3cr3t') } }]
    }
  })
  const target = `127.0.0.1:${origin.port}`
  const tls = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, servername: 'localhost' })
  const response = await rawTlsExchange(tls, `GET /inside HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`)
  t.equal(response.status, 500)
  t.match(response.head, /\r\nproxy-status: fastify-forward-proxy; error=proxy_internal_error; details="request transform threw"/i)
  t.notMatch(response.body, /vault|s3cr3t|\n\s+at /)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing reached the origin')
})
