import { test } from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

test('HOSTILE 38: a client that leaves while the app\'s hooks run is never forwarded', async (t) => {
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
