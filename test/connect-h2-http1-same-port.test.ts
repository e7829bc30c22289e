import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import { startHttp2Proxy, type Http2Proxy } from './helpers/http2-proxy'
import { startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { collectBytes } from './helpers/collect-bytes'

/** A TLS connection to the proxy that offers only HTTP/1.1 in ALPN. */
async function connectHttp1OverTls (proxy: Http2Proxy): Promise<TLSSocket> {
  const socket = tlsConnect({ host: '127.0.0.1', port: proxy.port, ca: proxy.tls.cert, ALPNProtocols: ['http/1.1'] })
  await new Promise<void>((resolve, reject) => { socket.once('secureConnect', resolve); socket.once('error', reject) })
  return socket
}

/** Reads from `socket` until `\r\n\r\n`; resolves with the head and what followed it. */
function readHead (socket: TLSSocket): Promise<{ head: string, rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0)
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk])
      const end = buffered.indexOf('\r\n\r\n')
      if (end === -1) return
      socket.removeListener('data', onData)
      socket.pause()
      resolve({ head: buffered.subarray(0, end).toString('latin1'), rest: buffered.subarray(end + 4) })
    }
    socket.on('data', onData)
    socket.once('close', () => reject(new Error(`closed before a head; got: ${buffered.toString()}`)))
  })
}

test('HTTP/1.1 CONNECT on the HTTP/2 TLS port (ALPN http/1.1) still opens a byte-exact tunnel', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startHttp2Proxy(t)
  const socket = await connectHttp1OverTls(proxy)
  t.teardown(() => { socket.destroy() })
  t.equal(socket.alpnProtocol, 'http/1.1')
  socket.write(`CONNECT 127.0.0.1:${destination.port} HTTP/1.1\r\nHost: 127.0.0.1:${destination.port}\r\n\r\n`)
  const { head, rest } = await readHead(socket)
  t.match(head, /^HTTP\/1\.1 200 /)
  t.equal(rest.length, 0)
  const upstream = await destination.nextConnection()

  const upBytes = randomBytes(256 * 1024)
  const downBytes = randomBytes(256 * 1024)
  const up = collectBytes(upstream, upBytes.length)
  const down = collectBytes(socket, downBytes.length)
  socket.resume()
  socket.write(upBytes)
  upstream.write(downBytes)
  t.ok((await up).equals(upBytes), 'client to destination, byte-exact')
  t.ok((await down).equals(downBytes), 'destination to client, byte-exact')
  t.equal(proxy.app.forwardProxy.activeTunnels, 1)
  // The destination finishes; its FIN reaches the client, whose own end comes back.
  const clientClosed = new Promise((resolve) => socket.once('close', resolve))
  upstream.resume()
  upstream.end()
  await clientClosed
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})
