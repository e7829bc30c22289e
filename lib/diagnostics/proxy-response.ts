import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyReply } from 'fastify'
import type { ProxyError } from './proxy-error'
import { formatProxyStatus } from './proxy-status'

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
