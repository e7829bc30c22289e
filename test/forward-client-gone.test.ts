import { test } from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

test('a client that leaves while the app\'s hooks run is never forwarded', async (t) => {
  const origin = await startOrigin(t)
  let originConnections = 0
  origin.server.on('connection', () => { originConnections++ })
  let hookEntered: () => void = () => {}
  const entered = new Promise<void>((resolve) => { hookEntered = resolve })
  let hookDone: () => void = () => {}
  const done = new Promise<void>((resolve) => { hookDone = resolve })
  const proxy = await startProxy(t, {}, (app) => {
    app.addHook('onRequest', async (request) => {
      if (!request.url.endsWith('/gone')) return
      hookEntered()
      // A slow hook (an auth lookup, say): the client gives up meanwhile.
      await once(request.raw.socket, 'close')
      hookDone()
    })
  })

  const client = connect(proxy.port, '127.0.0.1')
  client.on('error', () => {})
  await once(client, 'connect')
  client.write(`GET http://127.0.0.1:${origin.port}/gone HTTP/1.1\r\nHost: x\r\n\r\n`)
  await entered
  client.destroy()
  await done

  // Anything dialed for the departed client would reach the origin before this later request.
  const control = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/control HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(control.status, 200)
  t.same(origin.requests.map((r) => r.url), ['/control'])
  t.equal(originConnections, 1, 'only the control request connected to the origin')
})

test('a client that leaves while the destination has not answered yet: the request to the destination is aborted (its connection closes) and the request slot is given back', async (t) => {
  let received: () => void = () => {}
  const arrived = new Promise<void>((resolve) => { received = resolve })
  let originSideClosed: () => void = () => {}
  const closed = new Promise<void>((resolve) => { originSideClosed = resolve })
  // A destination that takes the request and never answers.
  const origin = await startOrigin(t, (req) => {
    req.socket.once('close', () => originSideClosed())
    received()
  })
  const proxy = await startProxy(t)

  const client = connect(proxy.port, '127.0.0.1')
  client.on('error', () => {})
  await once(client, 'connect')
  client.write(`GET http://127.0.0.1:${origin.port}/never HTTP/1.1\r\nHost: x\r\n\r\n`)
  await arrived
  t.equal(proxy.app.forwardProxy.activeRequests, 1, 'the request holds a slot while it waits')
  client.destroy()
  await closed
  t.pass('the destination\'s connection was closed once the client left')
  while (proxy.app.forwardProxy.activeRequests !== 0) await new Promise<void>((resolve) => setImmediate(resolve))
  t.equal(proxy.app.forwardProxy.activeRequests, 0, 'the slot was given back')
})
