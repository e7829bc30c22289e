import { test } from 'tap'
import { connect } from 'node:tls'
import { startOrigin, startProxy } from './helpers/servers'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'

test('on a TLS listener: an http:// request sent to the proxy over TLS gets its Host from the target, not from the client', async (t) => {
  const origin = await startOrigin(t)
  const listenerTls = await makeSelfSignedCertificate(t.testdir())
  const proxy = await startProxy(t, {}, undefined, { https: { key: listenerTls.key, cert: listenerTls.cert } } as object)
  const socket = connect({ port: proxy.port, host: '127.0.0.1', ca: listenerTls.cert, checkServerIdentity: () => undefined })
  t.teardown(() => { socket.destroy() })
  const text = await new Promise<string>((resolve, reject) => {
    let received = ''
    socket.on('data', (chunk: Buffer) => { received += chunk.toString('latin1') })
    socket.once('close', () => resolve(received))
    socket.once('error', reject)
    socket.write(`GET http://127.0.0.1:${origin.port}/h HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n`)
  })
  t.match(text, /^HTTP\/1\.1 200 /)
  t.equal(origin.requests.length, 1)
  const seen = origin.requests[0]
  t.equal(seen?.headers.host, `127.0.0.1:${origin.port}`)
  t.notMatch(JSON.stringify(seen?.rawHeaders), /other\.example/)
})
