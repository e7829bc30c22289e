import { test } from 'tap'
import { once } from 'node:events'
import { connect as tlsConnect } from 'node:tls'
import { startOrigin } from './helpers/servers'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'

test('server: close() gives a response streaming over HTTP/1.1 on a second, HTTP/2 listener the grace period, then cuts it', async (t) => {
  let streaming: (() => void) | undefined
  const started = new Promise<void>((resolve) => { streaming = resolve })
  const origin = await startOrigin(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    res.write('data: first\n\n')
    streaming?.()
  })
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }],
    destinations: LOOPBACK_ORIGINS
  }, dir, { shutdownGracePeriod: 300 })
  const client = tlsConnect({ host: '127.0.0.1', port: portOf(server.urls[1]), ca: tls.cert, ALPNProtocols: ['http/1.1'] })
  client.on('error', () => {})
  t.teardown(() => { client.destroy() })
  let received = ''
  const firstEvent = new Promise<void>((resolve) => client.on('data', (chunk: Buffer) => { received += chunk.toString(); if (received.includes('data: first')) resolve() }))
  await once(client, 'secureConnect')
  client.write(`GET http://127.0.0.1:${origin.port}/events HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\n\r\n`)
  await started
  await firstEvent
  const closed = once(client, 'close')
  let closedAfter = -1
  client.once('close', () => { closedAfter = Date.now() - closeStarted })
  const closeStarted = Date.now()
  await server.close()
  await closed
  t.match(received, /^HTTP\/1\.1 200 /)
  t.ok(closedAfter >= 250, `the stream was given the grace period, not cut at once (closed after ${closedAfter} ms)`)
})
