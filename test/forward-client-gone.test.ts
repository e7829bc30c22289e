import { test } from 'tap'
import { once } from 'node:events'
import { startOrigin, startProxy } from './helpers/servers'
import { connectClient, rawExchange } from './helpers/raw-client'
import { deferred } from './helpers/deferred'

test('a client that leaves while the app\'s hooks run is never forwarded', async (t) => {
  const origin = await startOrigin(t)
  let originConnections = 0
  origin.server.on('connection', () => { originConnections++ })
  const hookEntered = deferred()
  const hookDone = deferred()
  const proxy = await startProxy(t, {}, (app) => {
    app.addHook('onRequest', async (request) => {
      if (!request.url.endsWith('/gone')) return
      hookEntered.resolve()
      // A slow hook (an auth lookup, say): the client gives up meanwhile.
      await once(request.raw.socket, 'close')
      hookDone.resolve()
    })
  })

  const client = await connectClient(t, proxy.port)
  client.write(`GET http://127.0.0.1:${origin.port}/gone HTTP/1.1\r\nHost: x\r\n\r\n`)
  await hookEntered.promise
  client.destroy()
  await hookDone.promise

  // Anything dialed for the departed client would reach the origin before this later request.
  const control = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/control HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(control.status, 200)
  t.same(origin.requests.map((r) => r.url), ['/control'])
  t.equal(originConnections, 1, 'only the control request connected to the origin')
})

test('a client that leaves while the destination has not answered yet: the request to the destination is aborted (its connection closes) and the request slot is given back', async (t) => {
  const arrived = deferred()
  const originSideClosed = deferred()
  // A destination that takes the request and never answers.
  const origin = await startOrigin(t, (req) => {
    req.socket.once('close', () => originSideClosed.resolve())
    arrived.resolve()
  })
  const proxy = await startProxy(t)

  const client = await connectClient(t, proxy.port)
  client.write(`GET http://127.0.0.1:${origin.port}/never HTTP/1.1\r\nHost: x\r\n\r\n`)
  await arrived.promise
  t.equal(proxy.app.forwardProxy.activeRequests, 1, 'the request holds a slot while it waits')
  client.destroy()
  await originSideClosed.promise
  t.pass('the destination\'s connection was closed once the client left')
  while (proxy.app.forwardProxy.activeRequests !== 0) await new Promise<void>((resolve) => setImmediate(resolve))
  t.equal(proxy.app.forwardProxy.activeRequests, 0, 'the slot was given back')
})
