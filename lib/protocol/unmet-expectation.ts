// The answer to a request whose `Expect` the proxy cannot meet.

import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http'
import { ProxyError } from './errors'
import { writeRawResponseError } from './error-responses'
import { ObjectSlot } from './object-slot'

const unmet = new ObjectSlot<true>('unmetExpectation')

/**
 * Answers a request with an `Expect` other than `100-continue` with 417 and `Proxy-Status`
 * (`http_request_error`, `details="unsupported expectation"`), where Node would answer a bare
 * 417 itself. A proxy request (`isProxyRequest`) is handed on as any request is (the server's
 * `'request'` listeners), marked, so that it is authenticated, logged and counted like the rest
 * and the proxy route refuses it ({@link unmetExpectationError}); any other is answered here.
 * An application that listens for `'checkExpectation'` keeps its own answer.
 */
export function answerUnmetExpectations (server: HttpServer, pseudonym: string, isProxyRequest: (request: IncomingMessage) => boolean): void {
  if (server.listenerCount('checkExpectation') > 0) return
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    if (isProxyRequest(request)) {
      unmet.set(request, true)
      server.emit('request', request, response)
      return
    }
    writeRawResponseError(response, pseudonym, unmetExpectation())
  })
}

/** The 417 for a proxy request whose `Expect` the proxy cannot meet, or null for any other. */
export function unmetExpectationError (request: object): ProxyError | null {
  return unmet.get(request) === true ? unmetExpectation() : null
}

function unmetExpectation (): ProxyError {
  return new ProxyError('http_request_error', 'The proxy cannot meet the request\'s Expect.', { status: 417, details: 'unsupported expectation' })
}
