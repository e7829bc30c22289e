import { test, type Test } from 'tap'
import { connect, type Socket } from 'node:net'
import { startOrigin, startProxy } from './helpers/servers'
import { startCountingDestination } from './helpers/counting-destination'
import { eventually } from './helpers/eventually'
import { within } from './helpers/within'
import { ProxyAgent, request } from 'undici'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

/** Sends a forwarded POST that announces a large body and sends none of it; resolves with the response head, if any comes. */
function stalledPost (t: Test, proxyPort: number, destinationPort: number): { socket: Socket, head: Promise<string> } {
  const socket = connect(proxyPort, '127.0.0.1')
  socket.on('error', () => {})
  t.teardown(() => { socket.destroy() })
  let received = ''
  const head = new Promise<string>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
      const end = received.indexOf('\r\n\r\n')
      if (end !== -1) resolve(received.slice(0, end))
    })
  })
  socket.write(`POST http://127.0.0.1:${destinationPort}/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n`)
  return { socket, head }
}

test('attacker\'s review 4: forwarded requests in flight are capped by limits.maxConcurrentRequests; the next gets 503 connection_limit_reached and nothing is dialed for it', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startProxy(t, { limits: { maxConcurrentRequests: 3 } })
  const held = [0, 1, 2].map(() => stalledPost(t, proxy.port, destination.port))
  await eventually(() => destination.accepted === 3 && proxy.app.forwardProxy.activeRequests === 3)
  t.pass('three stalled uploads hold three destination connections')

  const refused = [0, 1, 2, 3, 4, 5, 6].map(() => stalledPost(t, proxy.port, destination.port))
  for (const { head } of refused) {
    const text = await within(head, 'the answer to a request over the limit', 5_000)
    t.match(text, /^HTTP\/1\.1 503 /)
    t.match(text, /\r\nproxy-status: fastify-forward-proxy; error=connection_limit_reached\r\n/i)
  }
  await expectNothingDialedBefore(t, destination.accepts, 'nothing was dialed for the seven refused requests', { after: 3 })

  for (const { socket } of held) socket.destroy()
  await eventually(() => proxy.app.forwardProxy.activeRequests === 0)
  t.equal(proxy.app.forwardProxy.activeRequests, 0, 'the slots come back when their clients leave')

  const origin = await startOrigin(t)
  const dispatcher = new ProxyAgent(proxy.url)
  t.teardown(() => dispatcher.close())
  const answered = await request(`http://127.0.0.1:${origin.port}/after`, { dispatcher })
  await answered.body.text()
  t.equal(answered.statusCode, 200, 'a new request is forwarded again')
  await eventually(() => proxy.app.forwardProxy.activeRequests === 0)
  t.equal(proxy.app.forwardProxy.activeRequests, 0, 'an answered request gives its slot back')
})
