import { test } from 'tap'
import Fastify from 'fastify'
import type { AddressInfo } from 'node:net'
import { rawExchange } from './helpers/raw-client'
import { startConfiguredServer, portOf } from './helpers/cli-server'
import { forwardProxy, proxyFrameworkErrors } from '../lib/index'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'

const BAD_TARGETS = ['http://user:hunter2@127.0.0.1%zz/', 'http://127.0.0.1:9/%zz?secret=hunter2']

test('a request target the router cannot decode gets the proxy\'s 400 with Proxy-Status, never an echo of the target or its userinfo (ready-to-run server)', async (t) => {
  const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }], allowAnonymous: true })
  for (const target of BAD_TARGETS) {
    const answer = await rawExchange(portOf(server.urls[0]), `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(answer.status, 400, target)
    t.match(answer.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="bad request target"\r\n/i)
    t.notMatch(answer.text, /hunter2|%zz|FST_ERR/, 'nothing of the target is echoed')
  }
})

test('an absolute-form target with another scheme than http(s) and userinfo gets 400 with Proxy-Status and is never echoed (the router refuses it since find-my-way 9.10.2; before, the proxy did), on the server and in an application with proxyFrameworkErrors', async (t) => {
  const target = 'ftp://user:hunter2@127.0.0.1/file'
  const request = `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`
  const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }], allowAnonymous: true })
  const app = Fastify({ logger: false, frameworkErrors: proxyFrameworkErrors })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  for (const port of [portOf(server.urls[0]), (app.server.address() as AddressInfo).port]) {
    const answer = await rawExchange(port, request)
    t.equal(answer.status, 400)
    // Which layer refuses it depends on the router version: its bad-URL answer or the proxy's own.
    t.match(answer.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="(bad request target|unsupported-scheme)"\r\n/i)
    t.notMatch(answer.text, /hunter2|FST_ERR/, 'nothing of the target is echoed')
  }
})

test('an application embedding the plugin gets the same answer with frameworkErrors: proxyFrameworkErrors', async (t) => {
  const app = Fastify({ logger: false, frameworkErrors: proxyFrameworkErrors })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const answer = await rawExchange((app.server.address() as AddressInfo).port, `GET ${BAD_TARGETS[0] ?? ''} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 400)
  t.match(answer.text, /proxy-status: fastify-forward-proxy; error=http_request_error/i)
  t.notMatch(answer.text, /hunter2/)
})
