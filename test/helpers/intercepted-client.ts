import { connect as http2Connect, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import { Duplex } from 'node:stream'
import type { Test } from 'tap'
import { openTunnel, type OpenTunnel } from './raw-client'
import { connectedSession } from './http2-session'

/** TLS options of a client inside an intercepted tunnel. */
export interface InnerTlsOptions {
  /** CA the client trusts: the operator CA in these tests. */
  ca: Buffer
  /** ALPN protocols offered (default `['http/1.1']`). */
  alpn?: string[]
  /** SNI sent (default none, as for an IP literal). */
  servername?: string
}

/**
 * The `code` of a client TLS error for a received handshake_failure alert (alert number 40).
 * The code is made from OpenSSL's reason text, which newer OpenSSL spells differently for the
 * same alert: "sslv3 alert handshake failure" in the OpenSSL 3.0 of Node 20, "ssl/tls alert
 * handshake failure" in the OpenSSL 3.5 of Node 22 and 24. Any other error (a certificate the
 * client rejects, a reset, a handshake that succeeds) matches neither.
 */
export const HANDSHAKE_FAILURE_ALERT = /^ERR_SSL_(?:SSLV3|SSL\/TLS)_ALERT_HANDSHAKE_FAILURE$/

/**
 * Runs a client TLS handshake over `transport` (a tunnel socket or an HTTP/2 CONNECT stream)
 * and resolves once it is done; rejects with the handshake error.
 */
export function startInnerTls (transport: Duplex, options: InnerTlsOptions): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      socket: transport,
      ca: options.ca,
      ALPNProtocols: options.alpn ?? ['http/1.1'],
      ...(options.servername === undefined ? { checkServerIdentity: () => undefined } : { servername: options.servername })
    })
    socket.once('secureConnect', () => {
      socket.removeListener('error', reject)
      socket.on('error', () => {})
      resolve(socket)
    })
    socket.once('error', reject)
  })
}

/**
 * The tunnel's socket with any bytes that arrived together with the 200 put back, so TLS
 * reads them (a server that speaks first, e.g. a handshake_failure alert, can be that fast).
 */
export function tunnelTransport (tunnel: OpenTunnel): Duplex {
  const { socket, rest } = tunnel
  if (rest.length === 0) return socket
  // A TLS socket over a net.Socket takes its handle and never sees unshifted bytes: go through JS.
  const transport = new Duplex({
    read () { socket.resume() },
    write (chunk: Buffer, _encoding, callback) { socket.write(chunk, callback) },
    final (callback) { socket.end(); callback() },
    destroy (error, callback) { socket.destroy(); callback(error) }
  })
  transport.push(rest)
  socket.on('data', (chunk: Buffer) => { if (!transport.push(chunk)) socket.pause() })
  socket.once('end', () => transport.push(null))
  socket.once('close', () => transport.destroy())
  return transport
}

/** Opens an HTTP/1.1 CONNECT to `target` through the proxy and runs TLS inside it; closed at teardown. */
export async function openInterceptedTls (
  t: Test,
  proxyPort: number,
  target: string,
  options: InnerTlsOptions,
  headers: Record<string, string> = {}
): Promise<TLSSocket> {
  const tunnel = await openTunnel(proxyPort, target, headers)
  if (tunnel.status !== 200) throw new Error(`CONNECT answered ${tunnel.head}`)
  t.teardown(() => { tunnel.socket.destroy() })
  return await startInnerTls(tunnelTransport(tunnel), options)
}

/** A raw HTTP/1.1 response read from a TLS socket. */
export interface RawResponse {
  status: number
  head: string
  body: string
}

/**
 * Writes `request` verbatim on `socket` and reads until the server closes the connection
 * (send `Connection: close`, or a request the server answers and closes on).
 */
export function rawTlsExchange (socket: TLSSocket, request: string): Promise<RawResponse> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.once('close', () => {
      const text = Buffer.concat(chunks).toString('latin1')
      const end = text.indexOf('\r\n\r\n')
      const head = end === -1 ? text : text.slice(0, end)
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0), head, body: end === -1 ? '' : text.slice(end + 4) })
    })
    socket.write(request)
  })
}

/** Starts an HTTP/2 client session over an established TLS socket (ALPN h2); closed at teardown. */
export async function http2OverTls (t: Test, socket: TLSSocket, authority: string): Promise<ClientHttp2Session> {
  return await connectedSession(t, http2Connect(`https://${authority}`, { createConnection: () => socket }))
}

/** An HTTP/2 response: head and body text. */
export interface Http2Response {
  headers: IncomingHttpHeaders
  status: number
  body: string
}

/** Sends one HTTP/2 request on `session` and reads the whole response. */
export function http2Request (session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: string): Promise<Http2Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined })
    let head: IncomingHttpHeaders = {}
    let text = ''
    stream.setEncoding('utf8')
    stream.on('response', (received) => { head = received })
    stream.on('data', (chunk: string) => { text += chunk })
    stream.once('end', () => resolve({ headers: head, status: Number(head[':status']), body: text }))
    stream.once('error', reject)
    if (body !== undefined) stream.end(body)
  })
}

/** A client TLS connection inside a tunnel that can drop the tunnel the way Go's Transport drops a spare connection. */
export interface DroppableTls {
  readonly tls: TLSSocket
  /**
   * Sends TLS close_notify (anything held back first) and resets the tunnel's TCP connection:
   * right behind it (`'reset'`, Go's close with the proxy's bytes unread), or once a FIN has
   * gone out (`'fin-then-reset'`, Go's close followed by the kernel's answer to the proxy's next
   * bytes). Either way the proxy's next write on the tunnel (its session ticket, its HTTP/2
   * SETTINGS or GOAWAY, a response) fails.
   */
  drop (how?: 'reset' | 'fin-then-reset'): void
}

/**
 * Runs a client TLS handshake inside `tunnel` (like {@link startInnerTls} over
 * {@link tunnelTransport}) through a transport that can reset the tunnel's connection right
 * behind the client's last bytes, as Go's Transport does when it closes a connection it no
 * longer needs (close_notify, then a close with the proxy's bytes unread, which resets it).
 * With `holdFinished`, what the client sends after its ClientHello (the end of its handshake)
 * is held back until `drop()`, so the proxy reads the end of the handshake, the close_notify and
 * the reset together, however its process (the bin's, say) is scheduled. That needs TLS 1.3
 * (what Node's client and the proxy agree on), where the client's handshake is done without the
 * proxy reading its Finished.
 */
export async function startDroppableTls (tunnel: OpenTunnel, options: InnerTlsOptions & { holdFinished?: boolean }): Promise<DroppableTls> {
  const { socket, rest } = tunnel
  const held: Buffer[] = []
  let writes = 0
  let dropping = false
  let finFirst = false
  const transport = new Duplex({
    read () { socket.resume() },
    write (chunk: Buffer, _encoding, callback) {
      if (dropping || (options.holdFinished === true && writes++ > 0)) held.push(chunk)
      else socket.write(chunk)
      callback()
    },
    final (callback) {
      if (held.length > 0) socket.write(Buffer.concat(held.splice(0)))
      if (finFirst) {
        // Reset only once the FIN is out: libuv refuses to reset a socket while it shuts down.
        socket.once('finish', () => socket.resetAndDestroy())
        socket.end()
      } else {
        socket.resetAndDestroy()
      }
      callback()
    },
    destroy (error, callback) {
      if (!socket.destroyed) socket.destroy()
      callback(error)
    }
  })
  if (rest.length > 0) transport.push(rest)
  socket.on('data', (chunk: Buffer) => { if (!transport.push(chunk)) socket.pause() })
  socket.once('end', () => transport.push(null))
  const tls = await startInnerTls(transport, options)
  return {
    tls,
    drop (how = 'reset') {
      // The close_notify is held too, and goes out with what follows it.
      dropping = true
      finFirst = how === 'fin-then-reset'
      tls.end()
    }
  }
}
