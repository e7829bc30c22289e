// The proxy route's last onSend hook: what the application's hooks leave on a forwarded
// response's head is held to the rules of the destination's own head.

import type { onSendHookHandler } from 'fastify'
import { scrubbedSecretsOf } from '../telemetry/request-telemetry'
import { isForwardedBody, isForwardedReply, replyHeaderRecord, responseScrubberOf } from './forwarded-response'
import { scrubReplyHeaders } from './scrubbed-response'
import { HOP_BY_HOP, hopByHopNamesOfObject } from './outgoing-head'

/**
 * The proxy route's last onSend hook. The application's onSend hooks run on forwarded
 * responses (`http://` and inside intercepted tunnels) and may change them; what they leave is
 * held to the rules of the destination's own head: hop-by-hop names and the names a
 * `Connection` header lists are removed whoever set them (a hook's `Connection` would otherwise
 * override the client's `Connection: close`), a secret's value in any header becomes its
 * placeholder (in names and values, with the scrubber the request was given: a value rotated
 * while it was in flight is still found), and a `Content-Length` no longer describes a body a hook replaced, so it is
 * removed (Fastify sets it again for a string or buffer, a stream goes chunked).
 */
export const holdForwardedResponseHead: onSendHookHandler = function holdForwardedResponseHead (request, reply, payload, done) {
  if (!isForwardedReply(reply)) {
    done(null, payload)
    return
  }
  // An empty list of values writes no field. Not reply.removeHeader: it also removes the name
  // from the raw response, which tells Node never to write its own Connection,
  // Content-Length or Transfer-Encoding (the client's Connection: close would go unsaid).
  // The names a Connection header lists are only looked for when there is one (rarely): the
  // usual response costs ten lookups here.
  if (reply.hasHeader('connection') || reply.hasHeader('proxy-connection')) {
    const dropped = hopByHopNamesOfObject(replyHeaderRecord(reply))
    for (const name of Object.keys(reply.getHeaders())) {
      if (dropped.has(name)) reply.header(name, [])
    }
  } else {
    for (const name of HOP_BY_HOP) {
      if (reply.hasHeader(name)) reply.header(name, [])
    }
  }
  // A body a hook replaced: HEAD, 204 and 304 answers have none, and keep the destination's length.
  if (payload != null && !isForwardedBody(reply, payload) && reply.hasHeader('content-length')) reply.header('content-length', [])
  const scrubber = responseScrubberOf(reply)
  if (scrubber !== null) scrubReplyHeaders(reply, scrubber, scrubbedSecretsOf(request))
  done(null, payload)
}
