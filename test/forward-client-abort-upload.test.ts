import { test } from 'tap'
import type { AddressInfo } from 'node:net'
import { createServer, type IncomingMessage } from 'node:http'
import { startProxy } from './helpers/servers'
import { connectClient } from './helpers/raw-client'
import { deferred } from './helpers/deferred'

for (const framing of ['chunked', 'content-length'] as const) {
  test(`bodies: a client that dies mid-upload (${framing}) never gives the origin a complete request`, async (t) => {
    const firstBytes = deferred<IncomingMessage>()
    const origin = createServer((req) => { req.once('data', () => firstBytes.resolve(req)) })
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
    const proxy = await startProxy(t)

    const client = await connectClient(t, proxy.port)
    const framingHeader = framing === 'chunked' ? 'Transfer-Encoding: chunked' : 'Content-Length: 1000'
    client.write(`POST http://127.0.0.1:${(origin.address() as AddressInfo).port}/up HTTP/1.1\r\nHost: x\r\n${framingHeader}\r\n\r\n`)
    client.write(framing === 'chunked' ? '5\r\nfirst\r\n' : 'first')
    const req = await firstBytes.promise
    let originError: unknown
    req.on('error', (error) => { originError = error })
    const closed = new Promise((resolve) => req.once('close', resolve))
    client.destroy()
    await closed
    t.notOk(req.complete, 'the origin saw the upload cut short, not a complete message')
    t.match(originError, { code: 'ECONNRESET' }, 'the origin\'s request was aborted')
  })
}
