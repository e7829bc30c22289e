// The Node internals the in-memory interception endpoint relies on, on real TLS connections:
// when one of these fails after a Node upgrade, lib/interception/node-server-internals.ts needs
// another way (its comments say what each step is for).
import { randomBytes } from 'node:crypto'
import { createSecureServer, connect as http2Connect, type Http2SecureServer } from 'node:http2'
import { createServer as createNetServer, connect as netConnect, type AddressInfo, type Socket } from 'node:net'
import { connect as tlsConnect, createSecureContext, TLSSocket } from 'node:tls'
import { test, type Test } from 'tap'
import { handOverTlsConnection, startConnectionChecks } from './helpers/internals'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { deferred } from './helpers/deferred'
import { within } from './helpers/within'

/** A server-side TLS socket as the endpoint gets it, and what Node left on it when its handshake was done. */
interface Terminated {
  readonly socket: TLSSocket
  /** `secureConnecting` when the handshake was done, before the handover. */
  readonly secureConnecting: unknown
  /** Whether it had a `_releaseControl` method. */
  readonly releasable: boolean
}

/**
 * A TCP server on 127.0.0.1 that terminates TLS on each connection outside any TLS server (as
 * tls-termination does: `new TLSSocket(socket, { isServer: true, server })`, the interception
 * leaf, the given ALPN list), then hands it to `endpoint` with handOverTlsConnection.
 */
async function startTerminator (
  t: Test,
  pki: InterceptionPki,
  endpoint: Http2SecureServer,
  alpn: string[]
): Promise<{ port: number, terminated: Promise<Terminated> }> {
  const secureContext = createSecureContext({ cert: pki.interceptionLeaf.cert, key: pki.interceptionLeaf.key })
  const terminated = deferred<Terminated>()
  const open = new Set<Socket>()
  const server = createNetServer((raw) => {
    raw.on('error', () => {})
    const socket = new TLSSocket(raw, { isServer: true, secureContext, ALPNProtocols: alpn, server: endpoint })
    open.add(raw).add(socket)
    socket.on('error', () => {})
    socket.once('secure', () => {
      const internals = socket as unknown as { secureConnecting?: unknown, _releaseControl?: unknown }
      terminated.resolve({ socket, secureConnecting: internals.secureConnecting, releasable: typeof internals._releaseControl === 'function' })
      handOverTlsConnection(endpoint, socket)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  // Destroyed first: a connection whose HTTP/2 session never started is never read to its end.
  t.teardown(() => new Promise<void>((resolve) => {
    for (const socket of open) socket.destroy()
    server.close(() => resolve())
  }))
  return { port: (server.address() as AddressInfo).port, terminated: terminated.promise }
}

function startEndpoint (t: Test): Http2SecureServer {
  const endpoint = createSecureServer({ allowHTTP1: true }, (req, res) => { res.end(`hello over HTTP/${req.httpVersion}`) })
  t.teardown(() => { endpoint.close() })
  return endpoint
}

test('a TLS socket terminated outside a TLS server and handed over serves HTTP/2 (Node leaves secureConnecting set on such a socket; cleared, the session starts)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const endpoint = startEndpoint(t)
  const { port, terminated } = await startTerminator(t, pki, endpoint, ['h2', 'http/1.1'])
  const session = http2Connect(`https://127.0.0.1:${port}`, { ca: pki.operatorCa.cert })
  session.on('error', () => {})
  t.teardown(() => session.destroy())

  const answered = new Promise<{ status: unknown, body: string }>((resolve, reject) => {
    const stream = session.request({ ':path': '/' })
    let status: unknown
    let body = ''
    stream.on('response', (headers) => { status = headers[':status'] })
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => { body += chunk })
    stream.on('end', () => resolve({ status, body }))
    stream.on('error', reject)
  })
  const { secureConnecting, releasable } = await within(terminated, 'the handshake')
  t.equal(secureConnecting, true, 'Node still leaves secureConnecting set on a server-side TLS socket made outside a TLS server (if not, handOverTlsConnection need not clear it)')
  t.equal(releasable, true, 'TLSSocket still has _releaseControl')
  t.same(await within(answered, 'an HTTP/2 answer on the handed-over connection (the session never started: Node no longer reads secureConnecting?)', 5_000), { status: 200, body: 'hello over HTTP/2.0' })
})

test('after the handover a TLS error on the connection reaches the socket\'s \'error\' event (control released), and the connection closes', async (t) => {
  const pki = await makeInterceptionPki(t)
  const endpoint = startEndpoint(t)
  const { port, terminated } = await startTerminator(t, pki, endpoint, ['http/1.1'])
  const raw = netConnect(port, '127.0.0.1')
  raw.on('error', () => {})
  t.teardown(() => raw.destroy())
  const client = tlsConnect({ socket: raw, ca: pki.operatorCa.cert, ALPNProtocols: ['http/1.1'] })
  client.on('error', () => {})
  await within(new Promise((resolve) => client.once('secureConnect', resolve)), 'the client\'s handshake')
  const { socket } = await within(terminated, 'the handshake')
  const failed = new Promise<Error & { code?: string }>((resolve) => socket.once('error', resolve))
  const closed = new Promise((resolve) => socket.once('close', resolve))

  // An application-data record no key decrypts, written under the TLS layer.
  raw.write(Buffer.concat([Buffer.from([0x17, 0x03, 0x03, 0x00, 0x40]), randomBytes(64)]))
  const error = await within(failed, 'an \'error\' event for the bad record (Node holds TLS errors back until _releaseControl: did it change?)', 5_000)
  t.match(error.code, /^ERR_SSL_/, 'the TLS layer\'s error')
  await within(closed, 'the connection closing', 5_000)
  t.pass('the HTTP server closed the connection')
})

test('startConnectionChecks starts Node\'s headersTimeout checks on a server that never listens: a handed-over HTTP/1.1 connection with an unfinished head gets 408', async (t) => {
  const pki = await makeInterceptionPki(t)
  const endpoint = startEndpoint(t)
  Object.assign(endpoint, { headersTimeout: 300, connectionsCheckingInterval: 50 })
  startConnectionChecks(endpoint)
  const { port } = await startTerminator(t, pki, endpoint, ['http/1.1'])
  const client = tlsConnect({ port, host: '127.0.0.1', ca: pki.operatorCa.cert, ALPNProtocols: ['http/1.1'] })
  client.on('error', () => {})
  t.teardown(() => client.destroy())
  let received = ''
  client.setEncoding('utf8')
  client.on('data', (chunk: string) => { received += chunk })
  await within(new Promise((resolve) => client.once('secureConnect', resolve)), 'the client\'s handshake')
  client.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n')

  await within(new Promise((resolve) => client.once('close', resolve)), 'the connection closing after headersTimeout (Node no longer starts its checks on \'listening\'?)', 5_000)
  t.match(received, /^HTTP\/1\.1 408 /, 'Node\'s own 408')
})
