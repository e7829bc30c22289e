import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy, startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a rejected CONNECT (407) with megabytes appended: the client still gets the whole 407 (no RST), the bytes are never parsed or forwarded', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const socket = connect(proxy.port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  let writeError = ''
  socket.on('error', (error: NodeJS.ErrnoException) => { writeError = error.code ?? 'error' })
  socket.pause()
  const appended = Buffer.alloc(8 * 1024 * 1024, 'GET http://127.0.0.1/ HTTP/1.1\r\nHost: x\r\n\r\n')
  // Read only once every byte has been handed over: the proxy must drain them, not reset.
  await new Promise<void>((resolve) => {
    socket.write(Buffer.concat([Buffer.from(`CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\n\r\n`), appended]), () => resolve())
  })
  let text = ''
  socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1') })
  socket.resume()
  await new Promise((resolve) => socket.once('close', resolve))
  t.equal(writeError, '', 'no EPIPE or ECONNRESET')
  t.match(text, /^HTTP\/1\.1 407 Proxy Authentication Required\r\n/)
  t.match(text, /\r\nproxy-authenticate: Basic /i)
  t.equal(text.match(/HTTP\/1\.1 /g)?.length, 1, 'exactly one response')
  await expectNothingDialedBefore(t, sentinel.accepts, 'the CONNECT target was never dialed')
})
