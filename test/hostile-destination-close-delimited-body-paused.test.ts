import { test } from 'tap'
import { createServer as createTlsServer } from 'node:tls'
import type { AddressInfo } from 'node:net'
import { createHash } from 'node:crypto'
import { makeInterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'

const BODY = Buffer.alloc(8 * 1024 * 1024)
for (let i = 0; i < BODY.length; i++) BODY[i] = (i * 31) & 0xff

test('a destination that ends its response by closing the connection, while the proxy holds its body back for a slower client, ends the response; the proxy does not crash (undici asserted on the paused parser)', async (t) => {
  const pki = await makeInterceptionPki(t)
  // Close-delimited bodies, and Content-Length with Connection: close: each ends with the FIN.
  const origin = createTlsServer({ key: pki.originLeaf.key, cert: pki.originLeaf.cert }, (socket) => {
    socket.on('error', () => {})
    socket.once('data', (request) => {
      const framing = request.toString().startsWith('GET /length') ? `Content-Length: ${BODY.length}\r\n` : ''
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n${framing}Connection: close\r\n\r\n`)
      socket.end(BODY)
    })
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => origin.close())
  const target = `127.0.0.1:${(origin.address() as AddressInfo).port}`
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })

  for (const path of ['/close', '/length', '/close', '/length']) {
    const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`)
    const chunks: Buffer[] = []
    await new Promise<void>((resolve) => {
      // A reader a little slower than the proxy: the body is held back and let go over and over.
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk)
        socket.pause()
        setImmediate(() => socket.resume())
      })
      socket.once('close', () => resolve())
    })
    const received = Buffer.concat(chunks)
    const bodyStart = received.indexOf('\r\n\r\n') + 4
    t.match(received.subarray(0, bodyStart).toString(), /^HTTP\/1\.1 200 /, `${path}: answered`)
    const body = received.subarray(bodyStart)
    const dechunked = /transfer-encoding: chunked/i.test(received.subarray(0, bodyStart).toString()) ? dechunk(body) : body
    t.equal(createHash('sha256').update(dechunked).digest('hex'), createHash('sha256').update(BODY).digest('hex'), `${path}: every byte, in order`)
  }
  // The proxy still answers.
  t.equal(proxy.app.server.listening, true)
})

/** The body of a chunked message. */
function dechunk (body: Buffer): Buffer {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const lineEnd = body.indexOf('\r\n', at)
    const size = parseInt(body.subarray(at, lineEnd).toString(), 16)
    if (size === 0 || Number.isNaN(size)) return Buffer.concat(parts)
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size))
    at = lineEnd + 2 + size + 2
  }
}
