import { test } from 'tap'
import { constants } from 'node:http2'
import { connectHttp2, startHttp2Proxy } from './helpers/http2-proxy'
import { startCountingDestination } from './helpers/counting-destination'
import { eventually } from './helpers/eventually'
import { within } from './helpers/within'

test('over HTTP/2, a request body stalled past httpActivityTimeout gets its 408, then its stream is closed (RST_STREAM NO_ERROR), not left half-open holding a stream slot', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startHttp2Proxy(t, { limits: { httpActivityTimeout: 400 } })
  const session = await connectHttp2(t, proxy)
  const stream = session.request({ ':method': 'POST', ':scheme': 'http', ':authority': `127.0.0.1:${destination.port}`, ':path': '/upload', 'content-length': '1000000' })
  stream.on('error', () => {})
  let status = 0
  let proxyStatus = ''
  let body = ''
  stream.on('response', (headers) => { status = Number(headers[':status']); proxyStatus = String(headers['proxy-status']) })
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => { body += chunk })
  const closed = new Promise<void>((resolve) => stream.once('close', () => resolve()))
  stream.write('first bytes')
  await eventually(() => destination.open === 1)
  await within(closed, 'the stream closing after the 408', 5_000)
  t.equal(status, 408)
  t.match(proxyStatus, /error=http_request_error; details="request body stalled"/)
  t.match(body, /stopped sending/, 'the 408\'s body arrived whole before the reset')
  t.equal(stream.rstCode, constants.NGHTTP2_NO_ERROR)
  await eventually(() => destination.open === 0, 5_000)
})
