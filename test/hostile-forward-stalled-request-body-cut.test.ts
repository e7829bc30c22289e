import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy } from './helpers/servers'
import { startCountingDestination } from './helpers/counting-destination'
import { eventually } from './helpers/eventually'
import { within } from './helpers/within'

test('a forwarded POST announcing a body and sending nothing is cut at httpActivityTimeout: 408 http_request_error, the destination connection closed', async (t) => {
  const destination = await startCountingDestination(t)
  const proxy = await startProxy(t, { limits: { httpActivityTimeout: 400 } })
  const client = connect(proxy.port, '127.0.0.1')
  client.on('error', () => {})
  t.teardown(() => { client.destroy() })
  let answer = ''
  client.on('data', (chunk: Buffer) => { answer += chunk.toString('latin1') })
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()))
  client.write(`POST http://127.0.0.1:${destination.port}/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nfirst bytes`)
  await eventually(() => destination.open === 1)
  t.pass('the request reached the destination')
  await within(closed, 'the client connection closing after the stall', 5_000)
  t.match(answer, /^HTTP\/1\.1 408 /, 'the client is told its request timed out')
  t.match(answer, /\r\nproxy-status: fastify-forward-proxy; error=http_request_error; details="request body stalled"\r\n/i)
  await eventually(() => destination.open === 0, 5_000)
  t.equal(destination.open, 0, 'the destination connection was closed')
})
