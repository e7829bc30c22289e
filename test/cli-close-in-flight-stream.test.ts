import { test } from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import { startOrigin } from './helpers/servers'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'

test('server: close() cuts a forwarded response still streaming (server-sent events) after the shutdown grace period', async (t) => {
  let streaming: (() => void) | undefined
  const started = new Promise<void>((resolve) => { streaming = resolve })
  const origin = await startOrigin(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: first\n\n')
    streaming?.()
  })
  const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }], destinations: LOOPBACK_ORIGINS }, '/', { shutdownGracePeriod: 200 })
  const client = connect(portOf(server.urls[0]), '127.0.0.1')
  client.on('error', () => {})
  t.teardown(() => { client.destroy() })
  let received = ''
  const firstEvent = new Promise<void>((resolve) => client.on('data', (chunk: Buffer) => { received += chunk.toString(); if (received.includes('data: first')) resolve() }))
  client.write(`GET http://127.0.0.1:${origin.port}/events HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\n\r\n`)
  await started
  await firstEvent
  const closed = once(client, 'close')
  let clientClosedEarly = false
  client.once('close', () => { clientClosedEarly = Date.now() - closeStarted < 150 })
  const closeStarted = Date.now()
  await server.close()
  await closed
  t.match(received, /^HTTP\/1\.1 200 /)
  t.notOk(clientClosedEarly, 'the stream was given the grace period, not cut at once')
})
