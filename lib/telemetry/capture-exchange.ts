// What a recorded request hands the traffic capture when it ends: the request as it came, the
// response head as written to the client, and what the access line knows of it.

import type { FastifyReply, FastifyRequest } from 'fastify'
import { proxyRequestTargetOf } from '../core/proxy-request'
import { formatAuthority, formatHostHeader } from '../protocol/hosts'
import { dialedHostOf, dialDurationsOf } from '../security/dialed-address'
import type { CaptureRecord, FinishedExchange } from '../capture/capture-record'

/** What the request's telemetry knows of it: who, what the proxy decided, where it was dialed. */
export type ExchangeFacts = Pick<FinishedExchange, 'user' | 'intercepted' | 'decision' | 'errorType' | 'responseBytes' | 'closeReason'> & {
  /** The socket the request went on, when one was dialed. */
  readonly dialed: object | undefined
}

/** The finished exchange of `request`, recorded in `record`; `relay` for a tunnel or a WebSocket. */
export function finishedExchange (
  request: FastifyRequest,
  reply: FastifyReply,
  record: CaptureRecord,
  facts: ExchangeFacts,
  relay: FinishedExchange['relay']
): FinishedExchange {
  const { raw } = request
  // A client that left before any head got none: its entry says 499, as its access line does.
  const headless = facts.closeReason !== undefined && !reply.raw.headersSent
  return {
    record,
    method: request.method,
    receivedUrl: receivedUrlOf(request),
    receivedHeaders: withoutPseudoHeaders(raw.rawHeaders),
    clientHttpVersion: `HTTP/${raw.httpVersion}`,
    status: headless ? ABANDONED_STATUS : relay === undefined ? reply.statusCode : relay.kind === 'websocket' ? 101 : 200,
    responseHeaders: record.switchedHead?.headers ?? (relay === undefined && !headless ? reply.getHeaders() : {}),
    responseBytes: facts.responseBytes,
    endedAt: performance.now(),
    user: facts.user,
    intercepted: facts.intercepted,
    decision: facts.decision,
    errorType: facts.errorType,
    serverAddress: dialedHostOf(facts.dialed),
    dial: dialDurationsOf(facts.dialed),
    ...(facts.closeReason === undefined ? {} : { closeReason: facts.closeReason }),
    ...(relay === undefined ? {} : { relay })
  }
}

/** The status recorded for a request whose client left before any answer (nginx's convention). */
export const ABANDONED_STATUS = 499

/**
 * The request's URL as it came: `http://...` as sent, `https://host/...` inside a tunnel,
 * `https://host:port/` for a CONNECT (`https://invalid/` for one whose target is not valid).
 */
function receivedUrlOf (request: FastifyRequest): string {
  const target = proxyRequestTargetOf(request.raw)
  if (target === null) return request.url
  if (target.kind === 'forward') {
    if (typeof target.target === 'string') return request.raw.url ?? ''
    const { destination, pathAndQuery } = target.target
    return `http://${formatHostHeader(destination.host, destination.port, 80)}${pathAndQuery}`
  }
  if (target.destination === null) return 'https://invalid/'
  if (target.kind === 'connect') return `https://${formatAuthority(target.destination.host, target.destination.port)}/`
  return `https://${formatHostHeader(target.destination.host, target.destination.port, 443)}${target.pathAndQuery}`
}

/** Flat name/value pairs without HTTP/2's pseudo-headers (`:method`, `:path`, ...). */
function withoutPseudoHeaders (raw: readonly string[]): string[] {
  const pairs: string[] = []
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!(raw[i] as string).startsWith(':')) pairs.push(raw[i] as string, raw[i + 1] as string)
  }
  return pairs
}
