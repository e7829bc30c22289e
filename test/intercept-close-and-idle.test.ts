import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { eventually } from './helpers/eventually'

test('TunnelIdleTimeout: an intercepted tunnel with no traffic after a request is closed after tunnelIdleTimeout and gives its slot back', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { limits: { tunnelIdleTimeout: 400 } },
    interception: interceptAll(pki)
  })
  const socket = await openInterceptedTls(t, proxy.port, `127.0.0.1:${origin.port}`, { ca: pki.operatorCa.cert })
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  const closed = new Promise((resolve) => socket.once('close', resolve))
  socket.write(`GET /keep-alive HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\n\r\n`)
  await eventually(() => Buffer.concat(chunks).toString().includes('/keep-alive"'))
  const answered = Date.now()
  await closed
  t.ok(Date.now() - answered >= 350, 'closed once idle for the timeout')
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
})

test('fastify.close() closes open intercepted tunnels (tunnel registry)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const idle = await openInterceptedTls(t, proxy.port, `127.0.0.1:${origin.port}`, { ca: pki.operatorCa.cert })
  const used = await openInterceptedTls(t, proxy.port, `127.0.0.1:${origin.port}`, { ca: pki.operatorCa.cert })
  const idleClosed = new Promise((resolve) => idle.once('close', resolve))
  idle.resume()
  const response = rawTlsExchange(used, `GET / HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\n\r\n`)
  await eventually(() => origin.requests.length === 1)
  t.equal(proxy.app.forwardProxy.activeTunnels, 2)
  await proxy.app.close()
  await idleClosed
  await response
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.pass('both tunnels closed and gave their slots back')
})
