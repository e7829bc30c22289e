import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'

const LOOP = /proxy-status: fastify-forward-proxy; error=proxy_loop_detected/i

// Every spelling the kernel dials as the proxy's own 127.0.0.1 listener (loopback allowed).
const SPELLINGS = ['[::ffff:7f00:1]', '[::ffff:127.0.0.1]', '0.0.0.0', '[::ffff:0.0.0.0]', '[::]', '0']

test('CONNECT to the proxy\'s own port under another spelling of its address gets 508, and no tunnel stacks up', async (t) => {
  const proxy = await startProxy(t, { limits: { maxConcurrentTunnels: 4 } })
  for (const host of SPELLINGS) {
    const tunnel = await openTunnel(proxy.port, `${host}:${proxy.port}`)
    t.equal(tunnel.status, 508, `CONNECT ${host}:${proxy.port}`)
    t.match(`${tunnel.head}\r\n`, LOOP)
    tunnel.socket.destroy()
  }
  t.equal(proxy.app.forwardProxy.activeTunnels, 0, 'no tunnel slot is held')
})

test('http:// requests to the proxy\'s own port under another spelling of its address get 508', async (t) => {
  const proxy = await startProxy(t)
  for (const host of SPELLINGS) {
    const answer = await rawExchange(proxy.port, `GET http://${host}:${proxy.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(answer.status, 508, `GET http://${host}:${proxy.port}/`)
    t.match(answer.text, LOOP)
  }
})
