import { test } from 'tap'
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls'
import { startOrigin } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { connectHttp2Listener } from './helpers/cli-http2'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const SMUGGLING = (port: number): string => `POST http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n`
const HTTP2_PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'

/** Sends `bytes` over TLS with the given ALPN offer and collects the reply until the server closes. */
function exchangeOverTls (options: ConnectionOptions, bytes: string | Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(options, () => socket.write(bytes))
    const chunks: Buffer[] = []
    const timer = setTimeout(() => { socket.destroy(); reject(new Error('the server did not close the connection')) }, 5000)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => { clearTimeout(timer); resolve(Buffer.concat(chunks)) })
  })
}

/** The error code of the first GOAWAY frame among the server's HTTP/2 frames, or undefined. */
function goawayErrorCode (frames: Buffer): number | undefined {
  for (let offset = 0; offset + 9 <= frames.length;) {
    const length = frames.readUIntBE(offset, 3)
    if (frames[offset + 3] === 0x07 && offset + 17 <= frames.length) return frames.readUInt32BE(offset + 13)
    offset += 9 + length
  }
  return undefined
}

test('server: bad clients of HTTP/2 listeners (unparsable HTTP/1.1, broken HTTP/2 frames, no TLS) are answered or dropped; the process serves on', async (t) => {
  const origin = await startOrigin(t)
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const listener = { host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }
  const server = await startConfiguredServer(t, { listen: [listener, listener], destinations: LOOPBACK_ORIGINS }, dir)
  for (const url of server.urls) {
    const port = portOf(url)
    const http1 = (await exchangeOverTls({ host: '127.0.0.1', port, ca: tls.cert, ALPNProtocols: ['http/1.1'] }, SMUGGLING(origin.port))).toString()
    t.match(http1, /^HTTP\/1\.1 400 /, `${url ?? ''}: unparsable HTTP/1.1 over TLS gets 400`)
    t.match(http1, /proxy-status: fastify-forward-proxy; error=http_request_error/i)

    // A valid preface, then a HEADERS frame on stream 0 with garbage in it: a connection error.
    const garbage = Buffer.concat([Buffer.from(HTTP2_PREFACE), Buffer.from([0, 0, 8, 0x01, 0x05, 0, 0, 0, 0]), Buffer.alloc(8, 0xff)])
    const http2 = await exchangeOverTls({ host: '127.0.0.1', port, ca: tls.cert, ALPNProtocols: ['h2'] }, garbage)
    t.not(goawayErrorCode(http2), undefined, `${url ?? ''}: broken HTTP/2 frames: GOAWAY, connection closed`)

    const plain = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    t.equal(plain.status, 0, `${url ?? ''}: plain text on a TLS port: closed without an HTTP answer`)

    const session = await connectHttp2Listener(t, url, tls.cert)
    const health = session.request({ ':path': '/healthz' })
    health.resume()
    const head = await new Promise<Record<string, unknown>>((resolve) => health.once('response', resolve))
    t.equal(head[':status'], 200, `${url ?? ''}: still serving`)
    session.close()
  }
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
})
