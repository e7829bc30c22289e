import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'
import { capturedLog } from './helpers/captured-log'
import { installMetrics } from './helpers/metric-reader'
import { connectHttp2, startHttp2Proxy } from './helpers/http2-proxy'
import { startCountingDestination } from './helpers/counting-destination'

test('a request with an Expect other than 100-continue gets 417 with Proxy-Status (http_request_error, unsupported expectation), and nothing is dialed', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startProxy(t)
  for (const request of [
    `GET http://127.0.0.1:${destination.port}/ HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n`,
    'GET / HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n'
  ]) {
    const answer = await rawExchange(proxy.port, request)
    t.equal(answer.status, 417, request.split('\r\n')[0] ?? '')
    t.match(answer.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="unsupported expectation"\r\n/i)
  }
  t.equal(destination.accepted, 0, 'nothing was dialed')
})

test('over HTTP/2 too, an unmet Expect gets 417 with Proxy-Status', async (t) => {
  const proxy = await startHttp2Proxy(t)
  const session = await connectHttp2(t, proxy)
  const stream = session.request({ ':method': 'GET', ':scheme': 'http', ':authority': '127.0.0.1:9', ':path': '/', expect: 'something-else' })
  stream.on('error', () => {})
  const headers = await new Promise<Record<string, unknown>>((resolve) => stream.once('response', resolve))
  stream.resume()
  t.equal(headers[':status'], 417)
  t.match(String(headers['proxy-status']), /error=http_request_error; details="unsupported expectation"/)
})

test('an unmet Expect on a proxy request is authenticated, logged and counted like any refusal: 407 without credentials, and the 417 has its access line and its refused/bad_request outcome', async (t) => {
  const installed = installMetrics(t)
  const log = capturedLog()
  const destination = await startCountingDestination(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } }, undefined, { logger: log.logger })
  const send = (headers: string): Promise<{ status: number, text: string }> =>
    rawExchange(proxy.port, `POST http://127.0.0.1:${destination.port}/upload HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 0\r\n${headers}Connection: close\r\n\r\n`)
  t.equal((await send('')).status, 407, 'credentials first')
  const refused = await send(`Proxy-Authorization: ${basic('alice', 's3cret')}\r\n`)
  t.equal(refused.status, 417)
  t.match(refused.text, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="unsupported expectation"\r\n/i)
  t.equal(destination.accepted, 0, 'nothing was dialed')
  t.match(log.access().at(-1), { kind: 'forward', user: 'alice', method: 'POST', status: 417, decision: 'deny', rule: 'request', reason: 'unsupported expectation', errorType: 'http_request_error' })
  t.strictSame(await installed.sums('forward_proxy.requests'), { '{"forward_proxy.kind":"forward"}': 2 })
  t.match(await installed.sums('forward_proxy.request.outcomes'), { '{"forward_proxy.kind":"forward","forward_proxy.outcome":"refused","forward_proxy.reason":"bad_request"}': 1 })
})
