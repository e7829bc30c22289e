import { test } from 'tap'
import basicAuth from '@fastify/basic-auth'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// The proxy runs its own policy (Proxy-Authorization, 407) and is not
// wrapped in the application's authorization (Authorization, 401), which guards only the
// application's own routes.
test('the proxy runs its own policy, not the application authorization', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } }, (app) => {
    app.register(async (admin) => {
      await admin.register(basicAuth, { validate: async (user, password) => { if (user !== 'admin' || password !== 'root') throw new Error('no') } })
      admin.addHook('onRequest', admin.basicAuth)
      admin.get('/admin', async () => 'admin area')
    })
  })

  const appRoute = await rawExchange(proxy.port, 'GET /admin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  t.equal(appRoute.status, 401, 'the application route keeps its own authorization')

  const authorized = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/admin HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\nConnection: close\r\n\r\n`)
  t.equal(authorized.status, 200, 'a proxy request with proxy credentials is forwarded, never asked for Authorization')
  t.equal(origin.requests.length, 1)
  t.equal(origin.requests[0]?.url, '/admin')
  const dialedBefore = origin.accepts.accepted

  const unauthorized = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/admin HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic('admin', 'root')}\r\nConnection: close\r\n\r\n`)
  t.equal(unauthorized.status, 407, 'application credentials do not open the proxy')
  t.match(unauthorized.text, /proxy-authenticate: Basic realm="fastify-forward-proxy"/i)
  t.equal(origin.requests.length, 1)
  await expectNothingDialedBefore(t, origin.accepts, 'the refused request never reached the destination', { after: dialedBefore })
})
