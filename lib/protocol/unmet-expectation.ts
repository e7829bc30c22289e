// The answer to a request whose `Expect` the proxy cannot meet.

import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http'
import { ProxyError } from './errors'
import { writeRawResponseError } from './error-responses'

/**
 * Answers a request with an `Expect` other than `100-continue` with 417 and `Proxy-Status`
 * (`http_request_error`, `details="unsupported expectation"`), where Node would answer a bare
 * 417 itself. An application that listens for `'checkExpectation'` keeps its own answer.
 */
export function answerUnmetExpectations (server: HttpServer, pseudonym: string): void {
  if (server.listenerCount('checkExpectation') > 0) return
  server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    writeRawResponseError(response, pseudonym, UNMET_EXPECTATION)
  })
}

const UNMET_EXPECTATION = new ProxyError('http_request_error', 'The proxy cannot meet the request\'s Expect.', { status: 417, details: 'unsupported expectation' })
