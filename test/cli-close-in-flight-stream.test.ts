import { test, type Test } from 'tap'
import { connect, type Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import { once } from 'node:events'
import { startOrigin } from './helpers/servers'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { deferred } from './helpers/deferred'
import type { RunningProxyServer } from './helpers/internals'

const GRACE_PERIOD = 300

/** Starts the server with a listener of one kind and connects an HTTP/1.1 client to it (destroyed at teardown). */
type Listener = (t: Test) => Promise<{ server: RunningProxyServer, client: Socket }>

/** Resolves with `client` once `event` says it is connected; its errors are ignored and it is destroyed at teardown. */
async function connected (t: Test, client: Socket, event: string): Promise<Socket> {
  client.on('error', () => {})
  t.teardown(() => { client.destroy() })
  await once(client, event)
  return client
}

const listeners: Array<{ name: string, start: Listener }> = [
  {
    name: 'over HTTP/1.1',
    start: async (t) => {
      const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }], destinations: LOOPBACK_ORIGINS }, '/', { shutdownGracePeriod: GRACE_PERIOD })
      const client = connect(portOf(server.urls[0]), '127.0.0.1')
      return { server, client: await connected(t, client, 'connect') }
    }
  },
  {
    name: 'over HTTP/1.1 on a second, HTTP/2 listener',
    start: async (t) => {
      const dir = t.testdir()
      const tls = await makeSelfSignedCertificate(dir)
      const server = await startConfiguredServer(t, {
        listen: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }],
        destinations: LOOPBACK_ORIGINS
      }, dir, { shutdownGracePeriod: GRACE_PERIOD })
      const client = tlsConnect({ host: '127.0.0.1', port: portOf(server.urls[1]), ca: tls.cert, ALPNProtocols: ['http/1.1'] })
      return { server, client: await connected(t, client, 'secureConnect') }
    }
  }
]

for (const { name, start } of listeners) {
  test(`server: close() gives a forwarded response still streaming (server-sent events) ${name} the shutdown grace period, then cuts it`, async (t) => {
    const streaming = deferred()
    const origin = await startOrigin(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: first\n\n')
      streaming.resolve()
    })
    const { server, client } = await start(t)
    let received = ''
    const firstEvent = new Promise<void>((resolve) => client.on('data', (chunk: Buffer) => { received += chunk.toString(); if (received.includes('data: first')) resolve() }))
    client.write(`GET http://127.0.0.1:${origin.port}/events HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\n\r\n`)
    await streaming.promise
    await firstEvent
    const closed = once(client, 'close')
    let closedAfter = -1
    client.once('close', () => { closedAfter = Date.now() - closeStarted })
    const closeStarted = Date.now()
    await server.close()
    await closed
    t.match(received, /^HTTP\/1\.1 200 /)
    t.ok(closedAfter >= GRACE_PERIOD - 50, `the stream was given the grace period, not cut at once (closed after ${closedAfter} ms)`)
  })
}
