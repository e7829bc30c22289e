import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy, startSentinel } from './helpers/servers'
import { LINGER_TIMEOUT_MS } from './helpers/internals'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('Resource bound: a refused CONNECT whose client keeps sending is drained only for the linger timeout, then closed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const socket = connect({ port: proxy.port, host: '127.0.0.1', allowHalfOpen: true })
  socket.on('error', () => {})
  t.teardown(() => socket.destroy())
  let text = ''
  socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1') })
  socket.write(`CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
  await new Promise<void>((resolve) => socket.once('end', () => resolve()))
  t.match(text, /^HTTP\/1\.1 407 /, 'answered, then FIN')
  const finAt = Date.now()
  // Keep talking after the proxy's FIN: the proxy drains without answering, but not forever.
  const chatter = setInterval(() => { if (!socket.destroyed) socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n') }, 50)
  t.teardown(() => clearInterval(chatter))
  await new Promise((resolve) => socket.once('close', resolve))
  clearInterval(chatter)
  const lingered = Date.now() - finAt
  t.ok(lingered >= LINGER_TIMEOUT_MS - 100 && lingered < LINGER_TIMEOUT_MS + 1500, `closed after ${lingered} ms of chatter`)
  t.equal(text.match(/HTTP\/1\.1 /g)?.length, 1, 'the chatter was never parsed or answered')
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
})
