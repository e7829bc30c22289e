// The proxy route's error handler: whatever a proxy request fails with becomes a status and
// `Proxy-Status`, logged at the level its kind deserves and counted.

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { ResolvedProxySettings } from './core/options'
import { PROXY_ERROR_STATUS, ProxyError, isProxyError, unexpectedFailure } from './protocol/errors'
import { sendProxyError } from './protocol/error-responses'
import { proxyAuthenticateChallenge } from './security/proxy-auth'
import { recordProxyFailure } from './telemetry/metrics'
import { noteProxyError } from './telemetry/request-telemetry'
import { certificateErrorHint } from './forward/destinations'
import { discardForwardedResponse } from './forward/forwarded-response'
import { cutResponse, isHttp2Response, resetStream } from './protocol/cut-response'
import { constants } from 'node:http2'

/**
 * Turns anything thrown while handling a proxy request into the response the client sees: the
 * ProxyError itself, 407 for authentication failures, the framework's own 4xx for malformed
 * requests, and 500 `proxy_internal_error` for anything unexpected (logged, never shown).
 */
function toProxyError (error: unknown): ProxyError {
  if (isProxyError(error)) return answerable(error) ? error : unexpectedFailure(error)
  const statusCode = (error as Partial<FastifyError>).statusCode
  if (statusCode === 407) return new ProxyError('http_request_denied', 'Proxy authentication required.', { status: 407 })
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return new ProxyError('http_request_error', 'The request is malformed.', { status: statusCode, cause: error })
  }
  return unexpectedFailure(error)
}

/**
 * True for a ProxyError the proxy can answer with: an error status (400 to 599) and a known
 * error type. A transform's `ProxyError` with status 101 would switch the client's protocol,
 * one with 200 read as a success, and a type of its own could break the `Proxy-Status` field.
 */
function answerable (error: ProxyError): boolean {
  return Number.isInteger(error.status) && error.status >= 400 && error.status <= 599 && Object.hasOwn(PROXY_ERROR_STATUS, error.errorType)
}

/** Builds the error handler of the proxy route's encapsulated context. */
export function createProxyErrorHandler (settings: ResolvedProxySettings) {
  return function proxyErrorHandler (error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    const proxyError = toProxyError(error)
    logProxyError(request, proxyError)
    recordProxyFailure(proxyError, error)
    noteProxyError(request, proxyError)
    if (reply.raw.headersSent) {
      // The head is out: the only honest signal left is an aborted message.
      cutResponse(reply.raw)
      return
    }
    discardForwardedResponse(reply)
    const extra: Record<string, string> = proxyError.status === 407 && settings.auth !== null
      ? { 'proxy-authenticate': proxyAuthenticateChallenge(settings.auth.realm) }
      : {}
    // A 408 leaves the request body unread: the HTTP/1.1 connection cannot carry another request,
    // and an HTTP/2 stream is reset once the answer is out (RFC 9113 section 8.1 allows NO_ERROR
    // after a complete response), or it would stay half-open, holding one of the session's streams.
    if (proxyError.status === 408) {
      const raw = reply.raw
      if (isHttp2Response(raw)) raw.stream.once('finish', () => resetStream(raw.stream, constants.NGHTTP2_NO_ERROR))
      else extra.connection = 'close'
    }
    if (proxyError.retryAfter !== undefined) extra['retry-after'] = String(proxyError.retryAfter)
    sendProxyError(reply, settings.pseudonym, proxyError, extra)
  }
}

function logProxyError (request: FastifyRequest, error: ProxyError): void {
  // A transform or hook may have thrown anything, null included: only an Error is described.
  const cause = error.cause instanceof Error ? error.cause as Error & { code?: string } : undefined
  const fields = {
    proxyStatus: error.errorType,
    status: error.status,
    cause: cause === undefined ? undefined : { name: cause.name, code: cause.code, message: cause.message },
    hint: certificateErrorHint(error)
  }
  if (error.status >= 500 && error.errorType === 'proxy_internal_error') request.log.error({ ...fields, err: cause }, error.message)
  else if (error.status >= 500) request.log.warn(fields, error.message)
  else request.log.info(fields, error.message)
}
