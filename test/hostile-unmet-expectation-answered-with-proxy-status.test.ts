import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
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
