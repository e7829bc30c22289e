import { test } from 'tap'
import { spawn } from 'node:child_process'
import { createServer, connect, type AddressInfo } from 'node:net'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import type { ForwardProxyResolver } from '../lib/index'

test('maxConcurrentTunnels: the tunnel beyond the limit gets 503 connection_limit_reached; a freed slot is reused', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { limits: { maxConcurrentTunnels: 2 } })
  const first = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const second = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const third = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.same([first.status, second.status, third.status], [200, 200, 503])
  t.match(third.head, /proxy-status: fastify-forward-proxy; error=connection_limit_reached/i)
  third.socket.destroy()
  first.socket.resetAndDestroy()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 1)
  const fourth = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.equal(fourth.status, 200)
  second.socket.destroy()
  fourth.socket.destroy()
})

test('connection_refused: nothing listening at the destination gets 502', async (t) => {
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const port = (closed.address() as AddressInfo).port
  await new Promise<void>((resolve) => closed.close(() => resolve()))
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${port}`)
  t.equal(tunnel.status, 502)
  t.match(tunnel.head, /error=connection_refused/)
  tunnel.socket.destroy()
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

test('dns_error: a name that does not resolve gets 502; dns_timeout: a resolver that never answers gets 504', async (t) => {
  const failing: ForwardProxyResolver = async () => { throw Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' }) }
  const proxy = await startProxy(t, { resolver: failing })
  const missing = await openTunnel(proxy.port, 'no-such-host.test:443')
  t.equal(missing.status, 502)
  t.match(missing.head, /error=dns_error/)
  missing.socket.destroy()

  const silent: ForwardProxyResolver = async (_name, signal) => await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)))
  const slow = await startProxy(t, { resolver: silent, limits: { connectTimeout: 200 } })
  const timedOut = await openTunnel(slow.port, 'slow-dns.test:443')
  t.equal(timedOut.status, 504)
  t.match(timedOut.head, /error=dns_timeout/)
  timedOut.socket.destroy()
  t.equal(slow.app.forwardProxy.activeTunnels, 0)
})

test('connection_timeout: a destination that never accepts gets 504 within connectTimeout', async (t) => {
  // A listener with a full accept queue that never accepts: Linux drops further SYNs.
  const python = spawn('python3', ['-c', [
    'import socket, sys, time',
    's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)',
    'print(s.getsockname()[1], flush=True)',
    'sys.stdin.read()'
  ].join('\n')], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => python.kill())
  const port = await new Promise<number>((resolve) => python.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))))
  const fillers = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1'), connect(port, '127.0.0.1')]
  for (const filler of fillers) filler.on('error', () => {})
  t.teardown(() => { for (const filler of fillers) filler.destroy() })
  const proxy = await startProxy(t, { limits: { connectTimeout: 300 } })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${port}`)
  t.equal(tunnel.status, 504)
  t.match(tunnel.head, /error=connection_timeout/)
  tunnel.socket.destroy()
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})

test('HOSTILE 38: a client that leaves while the destination is being resolved releases its slot and nothing is dialed', async (t) => {
  const destination = await startTcpDestination(t)
  let lookupStarted: () => void = () => {}
  const started = new Promise<void>((resolve) => { lookupStarted = resolve })
  const slow: ForwardProxyResolver = async (_name, signal) => {
    lookupStarted()
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve([{ address: '127.0.0.1', family: 4 }]), 300)
      signal.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason) })
    })
  }
  const proxy = await startProxy(t, { resolver: slow })
  const socket = connect(proxy.port, '127.0.0.1', () => socket.write(`CONNECT slow.test:${destination.port} HTTP/1.1\r\nHost: x\r\n\r\n`))
  socket.on('error', () => {})
  await started
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)
  // A reset: a FIN alone is a half-close, which a client may send after early data.
  socket.resetAndDestroy()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  let dialed = false
  void destination.nextConnection().then(() => { dialed = true })
  await new Promise((resolve) => setTimeout(resolve, 400))
  t.notOk(dialed, 'the destination was never dialed for a client that had gone')
})
