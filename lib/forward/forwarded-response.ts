// A forwarded response on its way to the client: what the proxy marks on its reply, the onSend
// hook that runs the transforms' `transformResponse` on it, and how a failure discards it.

import type { FastifyReply, onSendHookHandler } from 'fastify'
import type { Readable } from 'node:stream'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyRequestTransform } from '../../types/interception'
import { asError } from '../protocol/errors'
import { ObjectSlot } from '../protocol/object-slot'
import type { SecretScrubber } from '../security/secret-scrubber'
import { transformIncomingResponse, type HeaderRecord, type TransformCancellation } from './transforms'

/** What the forwarding handler leaves on a reply that carries a destination's response. */
export interface ForwardedResponse {
  /** The destination's body as sent to the client (whole, or a stream), or null when the response has none. */
  readonly body: Readable | Buffer | null
  /** The destination, as the transforms are told. */
  readonly destination: ForwardProxyDestination
  /** The transforms the request began with (a reconfiguration does not change them halfway). */
  readonly transforms: readonly ForwardProxyRequestTransform[]
  /** Aborts when the client leaves; the transforms' signal. */
  readonly cancellation: TransformCancellation
  /** Finds secret values in the head (the body is scrubbed already); null when none can be there. */
  readonly scrubber: SecretScrubber | null
}

// A property of the reply, not a WeakMap from reply to body: that map cost about 40 µs of CPU per
// forwarded request, as the garbage collector traced each body through it.
const forwardedResponses = new ObjectSlot<ForwardedResponse | undefined>('forwardedResponse')

/** Marks `reply` as carrying a destination's response, just before the handler sends it. */
export function markForwardedResponse (reply: FastifyReply, forwarded: ForwardedResponse): void {
  forwardedResponses.set(reply, forwarded)
}

/** The scrubber of the forwarded response `reply` carries, or null (none, or not a forwarded response). */
export function responseScrubberOf (reply: FastifyReply): SecretScrubber | null {
  return forwardedResponses.get(reply)?.scrubber ?? null
}

/** True when `reply` carries a destination's response (not an error answer, a tunnel or the application's own route). */
export function isForwardedReply (reply: FastifyReply): boolean {
  return forwardedResponses.get(reply) !== undefined
}

/** True when `payload` is the destination's response body as the proxy sent it on `reply` (no hook replaced it). */
export function isForwardedBody (reply: FastifyReply, payload: unknown): boolean {
  const body = forwardedResponses.get(reply)?.body
  return body !== undefined && body !== null && payload === body
}

/**
 * Before an error answer replaces a forwarded response (a transform or an application's onSend
 * hook failed): drops the destination's body (undici closes that connection; destroying an
 * unfinished body makes it emit an error, which its inactivity timer's listener takes) and
 * every header set from the destination's head, so none of them reaches the client with the
 * error. Does nothing for other replies.
 */
export function discardForwardedResponse (reply: FastifyReply): void {
  const forwarded = forwardedResponses.get(reply)
  if (forwarded === undefined) return
  forwardedResponses.set(reply, undefined)
  if (forwarded.body !== null && !Buffer.isBuffer(forwarded.body)) forwarded.body.destroy()
  for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name)
}

/**
 * The onSend hook that runs the transforms' `transformResponse`, in registration order, on a
 * forwarded response's head (status and headers, after the proxy removed hop-by-hop names and
 * added `Via`): forwardProxy adds it where it is registered among the application's onSend
 * hooks, so an application orders its own around it. What the transforms leave replaces the
 * reply's status and headers. A transform that
 * throws answers with its error instead (see {@link transformIncomingResponse}). Other replies,
 * and forwarded ones when no transform edits responses, pass untouched and without a turn of
 * the event loop.
 */
export const transformForwardedResponse: onSendHookHandler = function transformForwardedResponse (request, reply, payload, done) {
  const forwarded = forwardedResponses.get(reply)
  if (forwarded === undefined || !forwarded.transforms.some((transform) => transform.transformResponse !== undefined)) {
    done(null, payload)
    return
  }
  const before = replyHeaderRecord(reply)
  transformIncomingResponse(
    forwarded.transforms,
    request,
    forwarded.destination,
    { statusCode: reply.statusCode, headers: before },
    forwarded.cancellation
  ).then((head) => {
    reply.code(head.statusCode)
    // An empty list writes no field; see the proxy route's last onSend hook for why not removeHeader.
    for (const name of Object.keys(before)) if (head.headers[name] === undefined) reply.header(name, [])
    replaceReplyHeaders(reply, head.headers)
    // A status changed to 204 or 304 needs nothing more: Node writes no body for it, and the
    // destination's is still read through to its end.
    done(null, payload)
  }, (error: unknown) => done(asError(error)))
}

/**
 * Sets each of `headers` on `reply`, replacing what the reply held under that name.
 * (`reply.header` adds to an existing `Set-Cookie` instead of replacing it.)
 */
export function replaceReplyHeaders (reply: FastifyReply, headers: Readonly<Record<string, string | string[]>>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (name === 'set-cookie') reply.removeHeader(name)
    reply.header(name, value)
  }
}

/**
 * The reply's headers as text (Node may hold a number), lower-case names, without the ones
 * emptied with `reply.header(name, [])`: what a transform sees, and what the proxy route's last
 * onSend hook checks.
 */
export function replyHeaderRecord (reply: FastifyReply): HeaderRecord {
  const headers = Object.create(null) as HeaderRecord
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value === undefined || (Array.isArray(value) && value.length === 0)) continue
    headers[name] = typeof value === 'number' ? String(value) : value
  }
  return headers
}
