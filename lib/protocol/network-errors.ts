// How a failure while resolving, connecting to or talking with a destination becomes the
// ProxyError the client sees.

import { errors } from 'undici'
import { ProxyError, isProxyError } from './errors'

/** The `code` of a Node or undici error, if it has one. */
export function errorCode (error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code
    return typeof code === 'string' ? code : undefined
  }
  return undefined
}

/** The messages of undici's SocketErrors for a response the destination should never have sent. */
const MISBEHAVING_DESTINATION = new Set(['bad response', 'bad upgrade'])

/**
 * Maps a failure while resolving, connecting to or talking with a destination to the
 * ProxyError the client sees. ProxyErrors pass through unchanged; anything unknown becomes
 * 502 `connection_terminated` (never a 500 with internals).
 */
export function proxyErrorFromNetworkError (error: unknown): ProxyError {
  if (isProxyError(error)) return error
  if (error instanceof Error && isProxyError(error.cause)) return error.cause
  const options = { cause: error }
  // undici's HTTPParserError carries no `code` (its llhttp error lookup misses), so match the class.
  if (error instanceof errors.HTTPParserError) {
    return new ProxyError('http_protocol_error', 'The destination sent an invalid response.', { cause: withoutReceivedBytes(error) })
  }
  switch (errorCode(error)) {
    case 'ENOTFOUND':
    case 'ENODATA':
    case 'EAI_NONAME':
    case 'EAI_NODATA':
    case 'ESERVFAIL':
    case 'EAI_FAIL':
    case 'EAI_AGAIN':
      return new ProxyError('dns_error', 'The destination host name could not be resolved.', { ...options, details: 'name not resolved' })
    case 'ECONNREFUSED':
      return new ProxyError('connection_refused', 'The destination refused the connection.', options)
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new ProxyError('connection_timeout', 'Connecting to the destination timed out.', options)
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EADDRNOTAVAIL':
      return new ProxyError('destination_unavailable', 'The destination is unreachable.', { ...options, status: 502 })
    case 'UND_ERR_HEADERS_TIMEOUT':
      return new ProxyError('http_response_timeout', 'The destination did not answer in time.', options)
    case 'UND_ERR_BODY_TIMEOUT':
      return new ProxyError('connection_read_timeout', 'The destination stopped sending its response.', options)
    case 'UND_ERR_HEADERS_OVERFLOW':
      return new ProxyError('http_response_header_section_size', 'The destination sent a response head that is too large.', options)
    case 'HPE_INVALID_CONSTANT':
    case 'HPE_INVALID_HEADER_TOKEN':
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'UND_ERR_INFO':
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
      return new ProxyError('http_protocol_error', 'The destination sent an invalid response.', options)
    case 'UND_ERR_SOCKET':
      // undici's parser closes the connection with these when the destination answers what was
      // never asked: a response with no request, a 100 Continue, a 101 to a request without Upgrade.
      if (MISBEHAVING_DESTINATION.has((error as Error).message)) {
        return new ProxyError('http_protocol_error', 'The destination sent an invalid response.', options)
      }
      return new ProxyError('connection_terminated', 'The connection to the destination failed.', options)
    default:
      return new ProxyError('connection_terminated', 'The connection to the destination failed.', options)
  }
}

/**
 * `error` without the bytes undici's parser quotes from the response it could not parse (its
 * `data`): they may hold a secret the destination echoed, and every logger that serializes the
 * error would write them out. The message still says what was wrong.
 */
function withoutReceivedBytes<E extends Error> (error: E): E {
  if (error instanceof errors.HTTPParserError) Reflect.deleteProperty(error, 'data')
  return error
}
