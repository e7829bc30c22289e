import { request as httpRequest, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { ProxyError } from '../diagnostics/proxy-error'
import { errorCode, proxyErrorFromNetworkError } from '../diagnostics/network-error'

/** How the destination answered an upgrade request. */
export type UpgradeAnswer =
  /** 101: the connection now carries the upgraded protocol; `head` holds its first bytes. */
  | { readonly kind: 'switched', readonly response: IncomingMessage, readonly socket: Socket, readonly head: Buffer }
  /** Any other final status: an ordinary response whose body follows. */
  | { readonly kind: 'response', readonly response: IncomingMessage }

/** The request head to send. */
export interface UpgradeRequestHead {
  readonly method: string
  readonly path: string
  /** Flat name/value pairs, sent as they are (names, order), nothing added. */
  readonly headers: readonly string[]
}

const MAX_RESPONSE_HEAD = 64 * 1024

/**
 * Sends an upgrade request head on an established connection to the destination and waits for
 * its answer, parsed by Node's HTTP client: a 101 (the connection handed back with the bytes that
 * followed the head) or another final response. Fails with a ProxyError: 504
 * `http_response_timeout` after `timeout` without a head, 502 `http_response_header_section_size`
 * for a head over 64 KiB, 502 `http_protocol_error` for an invalid one, the network error's
 * mapping otherwise; `signal` (the client left) destroys the connection.
 */
export function exchangeUpgradeHead (connection: Socket, head: UpgradeRequestHead, timeout: number, signal: AbortSignal): Promise<UpgradeAnswer> {
  return new Promise((resolve, reject) => {
    let settled = false
    const settle = (outcome: UpgradeAnswer | ProxyError): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      if (outcome instanceof ProxyError) {
        request.destroy()
        connection.destroy()
        reject(outcome)
      } else resolve(outcome)
    }
    const request = httpRequest({
      createConnection: () => connection,
      method: head.method,
      path: head.path,
      headers: head.headers,
      setHost: false,
      maxHeaderSize: MAX_RESPONSE_HEAD
    })
    const timer = setTimeout(() => settle(new ProxyError('http_response_timeout', 'The destination did not answer in time.')), timeout)
    timer.unref()
    const onAbort = (): void => settle(new ProxyError('connection_terminated', 'The client went away before the destination answered.'))
    signal.addEventListener('abort', onAbort)
    request.on('error', (error) => settle(responseError(error)))
    request.once('upgrade', (response: IncomingMessage, socket: Socket, rest: Buffer) => settle({ kind: 'switched', response, socket, head: rest }))
    request.once('response', (response: IncomingMessage) => settle({ kind: 'response', response }))
    request.end()
  })
}

function responseError (error: Error): ProxyError {
  const code = errorCode(error) ?? ''
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new ProxyError('http_response_header_section_size', 'The destination sent a response head that is too large.', { cause: error })
  }
  if (code.startsWith('HPE_')) return new ProxyError('http_protocol_error', 'The destination sent an invalid response.', { cause: error })
  return proxyErrorFromNetworkError(error)
}
