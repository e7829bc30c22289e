import type { Socket } from 'node:net'
import { DEFAULT_PSEUDONYM } from '../options'
import { ProxyError } from './proxy-error'
import { writeRawProxyError } from './proxy-response'
import { errorCode } from './network-error'

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
