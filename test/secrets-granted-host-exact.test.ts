// A secret granted to a host name is granted to that name only: never to a name that merely
// ends or begins with it. Names resolve to the loopback origin through the proxy's resolver.
import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import type { ResolvedAddress } from '../lib/index'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const VALUE = 'sk-exact/4c1d+9e2f=7a3b5c'
const PLACEHOLDER = 'PLACEHOLDER_EXACT_91c3'

test('a secret granted to api.example.test reaches that host only: evil-api.example.test, xapi.example.test, sub.api.example.test and api.example.test.evil get 403 with nothing sent', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: {
      secrets: [{ name: 'api', value: VALUE, hosts: [`api.example.test:${origin.port}`], placeholder: PLACEHOLDER }],
      // Every name is the loopback origin, so only the grant decides what happens.
      resolver: async (): Promise<ResolvedAddress[]> => [{ address: '127.0.0.1', family: 4 }]
    },
    interception: {
      certificateProvider: staticProvider(pki),
      selector: { shouldIntercept: () => true },
      // The origin's certificate names 127.0.0.1 and localhost: accept it for the test names.
      checkDestinationCertificate: () => true
    }
  })

  for (const host of ['evil-api.example.test', 'xapi.example.test', 'sub.api.example.test', 'api.example.test.evil']) {
    const authority = `${host}:${origin.port}`
    const socket = await openInterceptedTls(t, proxy.port, authority, { ca: pki.operatorCa.cert })
    const refused = await rawTlsExchange(socket, `GET /steal HTTP/1.1\r\nHost: ${authority}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`)
    t.equal(refused.status, 403, host)
    t.match(refused.head, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="secret not allowed for this destination"/i, host)
  }
  await expectNothingDialedBefore(t, origin.accepts, 'no refused request reached the origin')

  const granted = `api.example.test:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, granted, { ca: pki.operatorCa.cert })
  const allowed = await rawTlsExchange(socket, `GET /mine HTTP/1.1\r\nHost: ${granted}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`)
  t.equal(allowed.status, 200, 'the granted host gets the value')
  t.same(origin.requests.map((seen) => [seen.url, seen.headers.authorization]), [['/mine', `Bearer ${VALUE}`]])
})
