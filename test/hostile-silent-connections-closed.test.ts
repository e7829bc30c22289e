import { connect, type Socket } from 'node:net'
import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { secondaryServersOf, resolveProxySettings } from './helpers/internals'
import { ForwardProxyOptionsError } from '../lib/index'
import type { AddressInfo } from 'node:net'

const FIRST_BYTE_TIMEOUT = 300
// Fails loudly instead of hanging when a connection is never closed.
const CLOSE_DEADLINE = 5_000

interface SilentConnection {
  readonly socket: Socket
  /** Resolves with the milliseconds from opening to the close, rejects past the deadline. */
  readonly closed: Promise<number>
}

function openSilent (port: number, host = '127.0.0.1'): SilentConnection {
  const socket = connect(port, host)
  const opened = Date.now()
  socket.on('error', () => {})
  const closed = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`silent connection to ${host}:${port} still open after ${CLOSE_DEADLINE} ms`)) }, CLOSE_DEADLINE)
    socket.once('close', () => { clearTimeout(timer); resolve(Date.now() - opened) })
  })
  return { socket, closed }
}

function connected (socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject) })
}

/** Sends one keep-alive request and resolves with its status once the whole response has arrived. */
function keepAliveGet (socket: Socket, originPort: number): Promise<number> {
  return new Promise((resolve) => {
    let text = ''
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1')
      const end = text.indexOf('\r\n\r\n')
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(text)?.[1] ?? -1)
      if (end === -1 || length < 0 || text.length < end + 4 + length) return
      socket.removeListener('data', onData)
      resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0))
    }
    socket.on('data', onData)
    socket.write(`GET http://127.0.0.1:${originPort}/ HTTP/1.1\r\nHost: x\r\n\r\n`)
  })
}

test('silent connections: the ready-to-run server closes every connection to a plain listener that sends nothing within limits.firstByteTimeout', async (t) => {
  const server = await startConfiguredServer(t, {
    listen: [{ host: 'localhost', port: 0 }, { host: '127.0.0.1', port: 0 }],
    limits: { firstByteTimeout: FIRST_BYTE_TIMEOUT }
  })
  const targets = [
    { port: portOf(server.urls[0]), host: '127.0.0.1' },
    { port: portOf(server.urls[1]), host: '127.0.0.1' },
    // Fastify's extra server for the other address of `localhost` (::1), when the machine has one.
    ...secondaryServersOf(server.app).map((extra) => ({ port: (extra.address() as AddressInfo).port, host: (extra.address() as AddressInfo).address }))
  ]
  const silent = targets.flatMap(({ port, host }) => Array.from({ length: 50 }, () => openSilent(port, host)))
  const lifetimes = await Promise.all(silent.map((connection) => connection.closed))
  t.equal(lifetimes.length, targets.length * 50, `all closed (${targets.map(({ host }) => host).join(', ')})`)
  t.ok(Math.min(...lifetimes) >= FIRST_BYTE_TIMEOUT - 50, `none closed before the timeout (shortest ${Math.min(...lifetimes)} ms)`)
  t.equal((await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }] })).servers.length, 1, 'a server still starts with the default')
})

test('silent connections: a keep-alive connection, a head still arriving and an open CONNECT tunnel outlive limits.firstByteTimeout', async (t) => {
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    limits: { firstByteTimeout: FIRST_BYTE_TIMEOUT }
  })
  const port = portOf(server.urls[0])

  const keepAlive = connect(port, '127.0.0.1')
  keepAlive.on('error', () => {})
  t.teardown(() => keepAlive.destroy())
  await connected(keepAlive)
  t.equal(await keepAliveGet(keepAlive, origin.port), 200, 'first request on the keep-alive connection')

  const slowHead = connect(port, '127.0.0.1')
  slowHead.on('error', () => {})
  t.teardown(() => slowHead.destroy())
  await connected(slowHead)
  slowHead.write('GET http://127.0.0.1/ HTTP/1.1\r\n')

  const tunnel = await openTunnel(port, `127.0.0.1:${destination.port}`)
  t.teardown(() => tunnel.socket.destroy())
  t.equal(tunnel.status, 200)
  const far = await destination.nextConnection()

  // Opened last, so its first-byte timer fires after every one of the connections above.
  const silent = openSilent(port)
  await silent.closed
  t.notOk(keepAlive.destroyed, 'the keep-alive connection is still open')
  t.notOk(slowHead.destroyed, 'the connection sending its head is left to headersTimeout')
  t.notOk(tunnel.socket.destroyed, 'the tunnel is still open')
  t.equal(await keepAliveGet(keepAlive, origin.port), 200, 'the keep-alive connection still serves')
  const echoed = new Promise<string>((resolve) => far.once('data', (chunk: Buffer) => resolve(chunk.toString())))
  tunnel.socket.write('still here')
  t.equal(await echoed, 'still here', 'the tunnel still relays')
})

test('silent connections: the plugin closes silent connections of the application\'s own plain server; limits.firstByteTimeout is checked', async (t) => {
  const proxy = await startProxy(t, { limits: { firstByteTimeout: FIRST_BYTE_TIMEOUT } })
  const lifetimes = await Promise.all(Array.from({ length: 20 }, () => openSilent(proxy.port).closed))
  t.equal(lifetimes.length, 20)
  t.equal(resolveProxySettings({}).limits.firstByteTimeout, 10_000, 'default 10 s')
  for (const bad of [0, -1, 1.5, 2 ** 31]) {
    t.throws(() => resolveProxySettings({ limits: { firstByteTimeout: bad } }), ForwardProxyOptionsError, `refused: ${bad}`)
  }
})
