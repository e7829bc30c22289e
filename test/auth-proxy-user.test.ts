import { test } from 'tap'
import type { ForwardProxyUser } from '../lib/index'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'

declare module '../lib/index' {
  interface ForwardProxyUser {
    tenant?: string
  }
}

test('the user a custom check returns is request.proxyUser in the app\'s preHandler; app routes see null', async (t) => {
  const origin = await startOrigin(t)
  const seen: Array<ForwardProxyUser | null> = []
  const proxy = await startProxy(t, {
    auth: { validate: async (username, password) => (password === 'pw' ? { name: username, tenant: `tenant-of-${username}` } : false) }
  }, (app) => {
    app.addHook('preHandler', async (request) => { seen.push(request.proxyUser) })
    app.get('/own', async (request) => ({ user: request.proxyUser }))
  })
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('bob', 'pw')}\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  const own = await rawExchange(proxy.port, `GET /own HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('bob', 'pw')}\r\nConnection: close\r\n\r\n`)
  t.match(own.text, /\{"user":null\}/)
  t.same(seen, [{ name: 'bob', tenant: 'tenant-of-bob' }, null])
})

test('a credential check that throws answers 407 and the proxy keeps serving', async (t) => {
  const origin = await startOrigin(t)
  let calls = 0
  const proxy = await startProxy(t, {
    auth: { validate: (username) => { calls++; if (username === 'boom') throw new Error('directory unavailable'); return true } }
  })
  const failed = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('boom', 'x')}\r\nConnection: close\r\n\r\n`)
  t.equal(failed.status, 407)
  t.notMatch(failed.text, /directory unavailable/, 'the check\'s error stays in the logs')
  const ok = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${basic('fine', 'x')}\r\nConnection: close\r\n\r\n`)
  t.equal(ok.status, 200)
  t.equal(calls, 2)
})
