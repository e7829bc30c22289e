// Error answers written outside Fastify's reply: on a raw socket or stream, and for requests Node's
// HTTP parser or Fastify's router refuse.

import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyReply } from 'fastify'
import { ProxyError } from './errors'
import { formatProxyStatus } from './proxy-status'
import { errorCode } from './network-errors'

/** Default pseudonym in `Via` and `Proxy-Status`. */
export const DEFAULT_PSEUDONYM = 'fastify-forward-proxy'

/** Extra headers some proxy errors carry, e.g. `Proxy-Authenticate` on 407. */
export type ExtraHeaders = Readonly<Record<string, string>>

/**
 * Answers a proxy request with `error`: its status, `Proxy-Status`, a short text body and no
 * internals. The message of a ProxyError is written by this package and safe to show.
 */
export function sendProxyError (reply: FastifyReply, pseudonym: string, error: ProxyError, extraHeaders: ExtraHeaders = {}): void {
  reply
    .code(error.status)
    .headers(extraHeaders)
    .header('proxy-status', formatProxyStatus(pseudonym, error))
    .header('content-type', 'text/plain; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(`${error.message}\n`)
}

/**
 * Writes `error` as a complete HTTP/1.1 response straight onto a socket and closes it. For
 * failures outside Fastify's request lifecycle (parse errors, a CONNECT that is not the first
 * request on its connection). Bytes the client sends afterwards are never parsed.
 */
export function writeRawProxyError (socket: Socket, pseudonym: string, error: ProxyError, extraHeaders: ExtraHeaders = {}): void {
  if (socket.destroyed) return
  const body = `${error.message}\n`
  const lines = [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}`,
    `Proxy-Status: ${formatProxyStatus(pseudonym, error)}`,
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Cache-Control: no-store',
    'Connection: close'
  ]
  for (const [name, value] of Object.entries(extraHeaders)) lines.push(`${name}: ${value}`)
  socket.on('error', () => {})
  socket.removeAllListeners('data')
  socket.resume()
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`)
  socket.destroySoon()
}

/** The part of a Node response (HTTP/1.1 or HTTP/2 compatibility) {@link writeRawResponseError} uses. */
export interface RawResponseLike {
  readonly headersSent: boolean
  writeHead (status: number, headers: Record<string, string | number>): unknown
  end (body: string): unknown
}

/**
 * Answers a request with `error` on its raw Node response, outside Fastify's lifecycle (a
 * request the proxy refuses before any hook may see it): status, `Proxy-Status`, short text.
 */
export function writeRawResponseError (res: RawResponseLike, pseudonym: string, error: ProxyError): void {
  if (res.headersSent) return
  const body = `${error.message}\n`
  res.writeHead(error.status, {
    'proxy-status': formatProxyStatus(pseudonym, error),
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store'
  })
  res.end(body)
}

const HEADER_TOO_LARGE = new Set(['HPE_HEADER_OVERFLOW'])
const TIMED_OUT = new Set(['ERR_HTTP_REQUEST_TIMEOUT', 'HPE_HEADERS_TIMEOUT'])

/**
 * A Fastify `clientErrorHandler` for proxy listeners: requests Node's HTTP parser refuses
 * (smuggling shapes, bad header bytes, oversized heads) are answered with 400, 431 or 408 and
 * `Proxy-Status: <pseudonym>; error=http_request_error`, then the connection closes. Nothing
 * after the bad bytes is parsed. Pass it as `Fastify({ clientErrorHandler: proxyClientErrorHandler })`.
 */
export function proxyClientErrorHandler (error: Error, socket: Socket): void {
  writeClientError(error, socket, DEFAULT_PSEUDONYM)
}

/** Same as {@link proxyClientErrorHandler}, for a proxy registered with another `via` pseudonym. */
export function createProxyClientErrorHandler (pseudonym: string): (error: Error, socket: Socket) => void {
  return (error, socket) => writeClientError(error, socket, pseudonym)
}

function writeClientError (error: Error, socket: Socket, pseudonym: string): void {
  const code = errorCode(error) ?? ''
  // TLS failures before the handshake is done (HTTPS servers pass them on as 'clientError'):
  // an HTTP answer could never be sent, and writing one would hold the socket open for good.
  if (code === 'ECONNRESET' || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || !socket.writable) {
    socket.destroy()
    return
  }
  const status = HEADER_TOO_LARGE.has(code) ? 431 : TIMED_OUT.has(code) ? 408 : 400
  writeRawProxyError(socket, pseudonym, new ProxyError('http_request_error', 'The request could not be parsed.', { status, details: code === '' ? 'malformed request' : code }))
}
