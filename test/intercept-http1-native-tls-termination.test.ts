import { test } from 'tap'
import { connect as netConnect, type Socket } from 'node:net'
import { Duplex } from 'node:stream'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { eventually } from './helpers/eventually'
import { capturedLog, type CapturedLog } from './helpers/captured-log'

// TLS of an intercepted HTTP/1.1 CONNECT is layered on the client's socket itself, so the
// tunnel's byte counts and idle timer read the socket's counters instead of seeing each byte.

/** The access lines of closed tunnels. */
function tunnelLines (log: CapturedLog): Array<Record<string, unknown>> {
  return log.access().filter((entry) => entry.kind === 'tunnel')
}

/** A client connection to the proxy, with the TLS it runs inside the tunnel. */
interface EarlyHelloTunnel {
  /** The connection to the proxy (plain TCP, or TLS to a TLS listener). */
  readonly connection: Socket
  /** Bytes of the CONNECT head the client wrote, and of the proxy's 200 it read. */
  readonly connectBytes: { written: number, read: number }
  /** TLS with the proxy's interception endpoint, inside the tunnel. */
  readonly inner: TLSSocket
}

/**
 * Opens a CONNECT to `target` on `connection` whose first write carries the CONNECT head and
 * the ClientHello together (the proxy gets the ClientHello as early bytes), then finishes the
 * TLS handshake inside the tunnel.
 */
async function openWithEarlyClientHello (connection: Socket, target: string, ca: Buffer): Promise<EarlyHelloTunnel> {
  const connectHead = Buffer.from(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`)
  const connectBytes = { written: connectHead.length, read: 0 }
  let firstWrite = true
  let answer = Buffer.alloc(0)
  const carrier = new Duplex({
    read () { connection.resume() },
    write (chunk: Buffer, _encoding, callback) {
      connection.write(firstWrite ? Buffer.concat([connectHead, chunk]) : chunk, callback)
      firstWrite = false
    },
    final (callback) { connection.end(); callback() },
    destroy (error, callback) { connection.destroy(); callback(error) }
  })
  connection.on('data', (chunk: Buffer) => {
    if (connectBytes.read > 0) {
      if (!carrier.push(chunk)) connection.pause()
      return
    }
    answer = Buffer.concat([answer, chunk])
    const end = answer.indexOf('\r\n\r\n')
    if (end === -1) return
    if (!answer.subarray(0, end).toString().startsWith('HTTP/1.1 200 ')) {
      carrier.destroy(new Error(`CONNECT answered ${answer.toString()}`))
      return
    }
    connectBytes.read = end + 4
    if (answer.length > connectBytes.read) carrier.push(answer.subarray(connectBytes.read))
  })
  connection.once('end', () => carrier.push(null))
  connection.once('close', () => carrier.destroy())
  const inner = tlsConnect({ socket: carrier, ca, ALPNProtocols: ['http/1.1'], checkServerIdentity: () => undefined })
  await new Promise<void>((resolve, reject) => {
    inner.once('secureConnect', resolve)
    inner.once('error', reject)
  })
  return { connection, connectBytes, inner }
}

/** Sends one keep-alive GET inside the tunnel and reads its response to the last byte of its body. */
async function getInside (inner: TLSSocket, authority: string, path: string): Promise<string> {
  inner.write(`GET ${path} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`)
  let text = ''
  return await new Promise((resolve) => {
    const onData = (chunk: Buffer): void => {
      text += chunk.toString()
      const end = text.indexOf('\r\n\r\n')
      const length = /content-length: (\d+)/i.exec(text)
      if (end !== -1 && length !== null && text.length >= end + 4 + Number(length[1])) {
        inner.removeListener('data', onData)
        resolve(text)
      }
    }
    inner.on('data', onData)
  })
}

async function connectPlain (port: number): Promise<Socket> {
  const socket = netConnect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  return socket
}

async function connectTls (port: number, pki: InterceptionPki): Promise<Socket> {
  const socket = tlsConnect({ port, host: '127.0.0.1', ca: pki.destinationCa.cert, ALPNProtocols: ['http/1.1'] })
  await new Promise((resolve) => socket.once('secureConnect', resolve))
  return socket
}

for (const listener of ['plain', 'TLS'] as const) {
  test(`access log: an intercepted HTTP/1.1 tunnel on a ${listener} listener counts exactly the TLS records each way, the ClientHello sent with the CONNECT head included`, async (t) => {
    const pki = await makeInterceptionPki(t)
    const origin = await startTlsOrigin(t, pki)
    const log = capturedLog()
    const proxy = await startInterceptingProxy(t, pki, {
      interception: interceptAll(pki),
      server: {
        logger: log.logger,
        ...(listener === 'TLS' ? { https: { key: pki.originLeaf.key, cert: pki.originLeaf.cert } } : {})
      }
    })
    const connection = listener === 'TLS' ? await connectTls(proxy.port, pki) : await connectPlain(proxy.port)
    t.teardown(() => connection.destroy())
    const authority = `127.0.0.1:${origin.port}`
    const tunnel = await openWithEarlyClientHello(connection, authority, pki.operatorCa.cert)

    t.match(await getInside(tunnel.inner, authority, '/first'), /^HTTP\/1\.1 200 [\s\S]*"\/first"/, 'the first request is answered')
    t.match(await getInside(tunnel.inner, authority, '/second'), /^HTTP\/1\.1 200 [\s\S]*"\/second"/, 'the second request on the same TLS session is answered')
    tunnel.inner.end()
    await new Promise((resolve) => connection.once('close', resolve))
    await eventually(() => tunnelLines(log).length === 1)

    t.match(tunnelLines(log)[0], {
      tunnel: 'intercepted',
      closeReason: 'closed',
      bytesIn: connection.bytesWritten - tunnel.connectBytes.written,
      bytesOut: connection.bytesRead - tunnel.connectBytes.read
    }, 'bytesIn and bytesOut are the TLS bytes the client wrote after its CONNECT head and read after the 200')
    t.equal(origin.requests.length, 2, 'both requests reached the origin')
  })
}

test('TunnelIdleTimeout: an intercepted HTTP/1.1 tunnel whose response trickles for three idle timeouts stays open, and closes once silent', async (t) => {
  const pki = await makeInterceptionPki(t)
  const trickle = { chunks: 12, everyMs: 100 }
  const origin = await startTlsOrigin(t, pki, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(trickle.chunks) })
    let sent = 0
    const timer = setInterval(() => {
      res.write('.')
      if (++sent === trickle.chunks) {
        clearInterval(timer)
        res.end()
      }
    }, trickle.everyMs)
    res.once('close', () => clearInterval(timer))
  })
  const log = capturedLog()
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { limits: { tunnelIdleTimeout: 400 } },
    interception: interceptAll(pki),
    server: { logger: log.logger }
  })
  const connection = await connectPlain(proxy.port)
  t.teardown(() => connection.destroy())
  const authority = `127.0.0.1:${origin.port}`
  const tunnel = await openWithEarlyClientHello(connection, authority, pki.operatorCa.cert)
  const closed = new Promise((resolve) => connection.once('close', resolve))

  const response = await getInside(tunnel.inner, authority, '/trickle')
  t.ok(response.endsWith('.'.repeat(trickle.chunks)), 'the whole trickled body arrived, 1.2 s on a tunnel with a 400 ms idle timeout')
  const answered = Date.now()
  await closed
  t.ok(Date.now() - answered >= 350, 'closed once idle for the timeout')
  await eventually(() => tunnelLines(log).length === 1)
  t.match(tunnelLines(log)[0], { tunnel: 'intercepted', closeReason: 'idle-timeout' })
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0)
})
