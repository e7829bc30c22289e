import { test } from 'tap'
import { connect, type AddressInfo } from 'node:net'
import { createServer, type IncomingMessage } from 'node:http'
import { once } from 'node:events'
import { startProxy } from './helpers/servers'

for (const framing of ['chunked', 'content-length'] as const) {
  test(`bodies: a client that dies mid-upload (${framing}) never gives the origin a complete request`, async (t) => {
    let arrived: (req: IncomingMessage) => void = () => {}
    const firstBytes = new Promise<IncomingMessage>((resolve) => { arrived = resolve })
    const origin = createServer((req) => { req.once('data', () => arrived(req)) })
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
    const proxy = await startProxy(t)

    const client = connect(proxy.port, '127.0.0.1')
    client.on('error', () => {})
    await once(client, 'connect')
    const framingHeader = framing === 'chunked' ? 'Transfer-Encoding: chunked' : 'Content-Length: 1000'
    client.write(`POST http://127.0.0.1:${(origin.address() as AddressInfo).port}/up HTTP/1.1\r\nHost: x\r\n${framingHeader}\r\n\r\n`)
    client.write(framing === 'chunked' ? '5\r\nfirst\r\n' : 'first')
    const req = await firstBytes
    let originError: unknown
    req.on('error', (error) => { originError = error })
    const closed = new Promise((resolve) => req.once('close', resolve))
    client.destroy()
    await closed
    t.notOk(req.complete, 'the origin saw the upload cut short, not a complete message')
    t.match(originError, { code: 'ECONNRESET' }, 'the origin\'s request was aborted')
  })
}
