import { test, type Test } from 'tap'
import { connect, type Socket } from 'node:net'
import { startProxy, type Proxy } from './helpers/servers'
import { openTunnel, basic } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { startOrderedDestination, type OrderedDestination } from './helpers/ordered-destination'

const ABANDONED = 40

/** How a client gives up on its CONNECT before the proxy answers it. */
type GiveUp = 'fin' | 'reset'

/** Resolves once the client's FIN or reset has been sent and the event loop has polled twice since. */
let givenUp: Promise<void> = Promise.resolve()

/**
 * Sends CONNECT heads on `count` new connections and gives up on each at once: with a FIN in
 * the same segment as the head (what the kernel delivers for a connection Go's Transport closed
 * while it sat in the listen queue), or with a reset right after the head was written.
 * Resolves once the proxy has closed every one of them.
 */
async function abandonConnects (t: Test, proxy: Proxy, target: string, count: number, giveUp: GiveUp, headers = ''): Promise<void> {
  const head = `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${headers}\r\n`
  const closed: Array<Promise<void>> = []
  const sent: Array<Promise<void>> = []
  for (let i = 0; i < count; i++) {
    const socket: Socket = connect(proxy.port, '127.0.0.1')
    socket.on('error', () => {})
    t.teardown(() => { socket.destroy() })
    closed.push(new Promise((resolve) => socket.once('close', () => resolve())))
    sent.push(new Promise((resolve) => {
      if (giveUp === 'fin') socket.end(head, () => resolve())
      else socket.write(head, () => { socket.resetAndDestroy(); resolve() })
    }))
  }
  givenUp = Promise.all(sent).then(afterTwoPolls)
  await Promise.all(closed)
}

function afterTwoPolls (): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(() => setImmediate(resolve))))
}

/**
 * Abandons CONNECTs and proves the destination was never dialed for them: every abandoned
 * connection must close before the destination accepts anything (a dial fails the test at
 * once), and the first connection the destination then accepts is a healthy tunnel's.
 */
async function assertNothingDialed (
  t: Test,
  proxy: Proxy,
  destination: OrderedDestination,
  giveUp: GiveUp,
  headers: Record<string, string> = {}
): Promise<void> {
  const target = `127.0.0.1:${destination.port}`
  const extra = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  const outcome = await Promise.race([
    abandonConnects(t, proxy, target, ABANDONED, giveUp, extra).then(() => 'every abandoned connection closed'),
    destination.firstAccepted.then(() => 'the destination was dialed for an abandoned CONNECT')
  ])
  if (!t.equal(outcome, 'every abandoned connection closed')) return
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0, 'no tunnel slot is held for them')

  // Loopback accepts in order: had any abandoned CONNECT been dialed, its connection would come
  // before the healthy tunnel's.
  const healthy = await openTunnel(proxy.port, target, headers)
  t.equal(healthy.status, 200, 'the proxy still serves')
  healthy.socket.write('marker')
  t.equal(await destination.indexOfSender('marker'), 0, 'the first connection the destination accepted is the healthy tunnel\'s')
  healthy.socket.destroy()
}

test('a CONNECT whose client closes before its answer (FIN with the head) gets nothing dialed', async (t) => {
  const destination = await startOrderedDestination(t)
  const proxy = await startProxy(t)
  await assertNothingDialed(t, proxy, destination, 'fin')
})

test('a CONNECT whose client resets right after its head gets nothing dialed', async (t) => {
  const destination = await startOrderedDestination(t)
  const proxy = await startProxy(t)
  await assertNothingDialed(t, proxy, destination, 'reset')
})

test('an authenticated CONNECT whose client leaves before its answer gets nothing dialed', async (t) => {
  const destination = await startOrderedDestination(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  await assertNothingDialed(t, proxy, destination, 'fin', { 'Proxy-Authorization': basic('alice', 's3cret') })
})

test('a CONNECT whose client leaves while the application\'s hook runs gets nothing dialed', async (t) => {
  const destination = await startOrderedDestination(t)
  const proxy = await startProxy(t, {}, (app) => {
    // An application hook that takes its time (a policy service, a quota check): the client
    // leaves meanwhile. The hook goes on once the proxy has seen the client go, or at the latest
    // once every FIN or reset has had time to be read, so a proxy that missed them fails fast.
    app.addHook('onRequest', async (request) => {
      if (request.method !== 'CONNECT') return
      const socket = request.raw.socket
      if (!socket.destroyed) await Promise.race([new Promise((resolve) => socket.once('close', resolve)), givenUp])
    })
  })
  await assertNothingDialed(t, proxy, destination, 'fin')
})

test('early bytes sent with the CONNECT still reach the destination once the tunnel is up', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const socket = connect(proxy.port, '127.0.0.1')
  socket.on('error', () => {})
  const early = Buffer.alloc(100 * 1024, 'e')
  socket.write(`CONNECT 127.0.0.1:${destination.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
  socket.write(early)
  const upstream = await destination.nextConnection()
  let received = 0
  await new Promise<void>((resolve) => {
    upstream.on('data', (chunk: Buffer) => {
      received += chunk.length
      if (received >= early.length) resolve()
    })
  })
  t.equal(received, early.length, 'every early byte arrived, past the bound where the proxy stops reading ahead')
  socket.destroy()
})
