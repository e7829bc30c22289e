import type { FastifyReply, FastifyRequest } from 'fastify'
import { Transform, pipeline, type Readable } from 'node:stream'
import type { ProxyRuntime } from '../proxy-runtime'
import { ProxyError } from '../diagnostics/proxy-error'
import { proxyErrorFromNetworkError } from '../diagnostics/network-error'
import { formatAuthority, formatHostHeader } from '../security/canonical-host'
import type { AbsoluteTarget, AbsoluteTargetProblem } from './absolute-target'
import { decideMaxForwards } from './max-forwards'
import { buildOutgoingRequestHeaders } from './request-headers'
import { buildClientResponseHeaders } from './response-headers'
import { viaEntry, viaListsPseudonym } from './via'

const TARGET_PROBLEMS: Record<AbsoluteTargetProblem, string> = {
  'https-scheme': 'https:// targets must use CONNECT.',
  'unsupported-scheme': 'Only http:// targets can be forwarded.',
  malformed: 'The request target is not a valid absolute http:// URL.'
}

/**
 * Forwards an absolute-form `http://` request (SPEC 4.4): policy check, Max-Forwards, header
 * rebuild, then the request and its body stream to the destination over undici and the
 * response streams back. Throws ProxyError for anything answered by the proxy itself.
 */
export async function forwardAbsoluteRequest (
  request: FastifyRequest,
  reply: FastifyReply,
  target: AbsoluteTarget | AbsoluteTargetProblem,
  runtime: ProxyRuntime
): Promise<void> {
  if (typeof target === 'string') {
    throw new ProxyError('http_request_error', TARGET_PROBLEMS[target], { details: target })
  }
  const { pseudonym } = runtime.settings
  if (viaListsPseudonym(request.headers.via, pseudonym)) {
    throw new ProxyError('proxy_loop_detected', 'The request has already passed through this proxy.')
  }
  const { destination, pathAndQuery } = target
  runtime.policy.checkDestination(destination)

  const maxForwards = decideMaxForwards(request.method, headerText(request.headers['max-forwards']))
  if (maxForwards.action === 'refuse-trace') {
    throw new ProxyError('http_request_denied', 'TRACE is not echoed by this proxy.', { status: 405, details: 'Max-Forwards is 0' })
  }
  if (maxForwards.action === 'answer-options') {
    reply.code(200).header('proxy-status', pseudonym).header('content-length', '0').send()
    return
  }

  const raw = request.raw
  const via = viaEntry(raw.httpVersion, pseudonym)
  const host = formatHostHeader(destination.host, destination.port, 80)
  const headers = buildOutgoingRequestHeaders(raw.rawHeaders, { host, via, maxForwards: maxForwards.value })

  const abort = new AbortController()
  reply.raw.once('close', () => { if (!reply.raw.writableFinished) abort.abort() })
  // A client that left while the app's hooks ran has already had its 'close': dial nothing.
  if (clientGone(reply)) throw new ProxyError('connection_terminated', 'The client went away before the request was forwarded.')

  const response = await runtime.dispatcher.request({
    origin: `http://${formatAuthority(destination.host, destination.port)}`,
    path: pathAndQuery,
    method: request.method,
    headers,
    body: hasBody(request) ? raw : null,
    signal: abort.signal
  }).catch((error: unknown) => { throw proxyErrorFromNetworkError(error) })

  const contentType = headerText(response.headers['content-type']) ?? ''
  const idleTimeout = contentType.toLowerCase().startsWith('text/event-stream')
    ? runtime.settings.limits.tunnelIdleTimeout
    : runtime.settings.limits.httpActivityTimeout
  reply.code(response.statusCode).headers(buildClientResponseHeaders(response.headers, via))
  if (request.method === 'HEAD' || response.statusCode === 204 || response.statusCode === 304) {
    response.body.resume()
    reply.send()
    return
  }
  reply.send(withInactivityTimeout(response.body, idleTimeout))
}

/** True when the client's connection (HTTP/1.1) or stream (HTTP/2) is already closed. */
function clientGone (reply: FastifyReply): boolean {
  const raw: { destroyed?: boolean, stream?: { destroyed: boolean } } = reply.raw
  return raw.destroyed === true || raw.stream?.destroyed === true
}

/** True when the client's request carries a body (RFC 9112 section 6.3). */
function hasBody (request: FastifyRequest): boolean {
  const { headers } = request
  if (headers['transfer-encoding'] !== undefined) return true
  const length = headers['content-length']
  return length !== undefined && length !== '0'
}

function headerText (value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/**
 * Passes `body` through, failing it with a read-timeout ProxyError when no bytes arrive for
 * `idleTimeout`; the timer restarts on every chunk, so a slow but live stream is never cut.
 * (A 'data' listener on `body` itself would start it flowing before the reply pipes it.)
 */
function withInactivityTimeout (body: Readable, idleTimeout: number): Readable {
  const timer = setTimeout(() => {
    relay.destroy(new ProxyError('connection_read_timeout', 'The destination stopped sending its response.'))
  }, idleTimeout)
  timer.unref()
  const relay = new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      timer.refresh()
      callback(null, chunk)
    }
  })
  pipeline(body, relay, () => clearTimeout(timer))
  return relay
}
