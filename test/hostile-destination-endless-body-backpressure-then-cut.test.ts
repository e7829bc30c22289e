import { test } from 'tap'
import { createServer, type ServerResponse } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { startOrigin, startProxy } from './helpers/servers'
import { settled } from './helpers/settled'
import { rawExchange } from './helpers/raw-client'
import { deferred } from './helpers/deferred'

const CHUNK = Buffer.alloc(16 * 1024, 0x61)

test('an endless chunked body to a client that stops reading is held back by backpressure (bounded, not buffered), then cut at httpActivityTimeout; the client can tell the body is incomplete', async (t) => {
  let written = 0
  const originGone = deferred()
  const origin = createServer((_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' })
    res.on('close', () => originGone.resolve())
    // Writes for ever, as fast as the proxy takes it: only backpressure can stop it.
    const pump = (): void => {
      while (!res.destroyed) {
        written += CHUNK.length
        if (!res.write(CHUNK)) { res.once('drain', pump); return }
      }
    }
    pump()
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { origin.closeAllConnections(); origin.close() })
  const originPort = (origin.address() as AddressInfo).port
  const proxy = await startProxy(t, { limits: { httpActivityTimeout: 1000 } })

  const client = connect(proxy.port, '127.0.0.1')
  client.on('error', () => {})
  t.teardown(() => client.destroy())
  const received: Buffer[] = []
  const head = new Promise<void>((resolve) => client.once('data', (chunk: Buffer) => { received.push(chunk); client.pause(); resolve() }))
  client.write(`GET http://127.0.0.1:${originPort}/endless HTTP/1.1\r\nHost: x\r\n\r\n`)
  await head
  t.match(Buffer.concat(received).toString('latin1'), /^HTTP\/1\.1 200 .*\r\ntransfer-encoding: chunked\r\n/is, 'the response started, chunked')

  const plateau = await settled(() => written, 300, 30_000)
  t.ok(plateau < 64 * 1024 * 1024, `the origin was held back after ${(plateau / 1024 / 1024).toFixed(1)} MiB (socket buffers), not drained into the proxy`)
  await originGone.promise
  t.pass('the stalled exchange was cut at httpActivityTimeout: the origin connection is closed')

  const clientClosed = new Promise<void>((resolve) => client.once('close', () => resolve()))
  client.on('data', (chunk: Buffer) => received.push(chunk))
  client.resume()
  await clientClosed
  const body = Buffer.concat(received).toString('latin1')
  t.notOk(body.endsWith('0\r\n\r\n'), 'no last-chunk: the client sees a cut body, not a complete one')

  const ordinary = await startOrigin(t)
  const after = await rawExchange(proxy.port, `GET http://127.0.0.1:${ordinary.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(after.status, 200, 'the proxy serves on')
})
