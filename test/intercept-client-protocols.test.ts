import { test } from 'tap'
import type { ForwardProxyClientProtocols } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const expectations: Array<[ForwardProxyClientProtocols, string | false]> = [
  ['http1AndHttp2', 'h2'],
  ['http1', 'http/1.1']
]

for (const [clientProtocols, negotiated] of expectations) {
  test(`ClientProtocols ${clientProtocols}: a client offering h2 and http/1.1 negotiates ${String(negotiated)} by ALPN`, async (t) => {
    const pki = await makeInterceptionPki(t)
    const origin = await startTlsOrigin(t, pki)
    const proxy = await startInterceptingProxy(t, pki, {
      interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true }, clientProtocols }
    })
    const socket = await openInterceptedTls(t, proxy.port, `127.0.0.1:${origin.port}`, { ca: pki.operatorCa.cert, alpn: ['h2', 'http/1.1'] })
    t.equal(socket.alpnProtocol, negotiated)
    socket.destroy()
  })
}

test('ClientProtocols http2: a client offering only http/1.1 gets no HTTP/1.1 service', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: () => true }, clientProtocols: 'http2' }
  })
  const outcome = await openInterceptedTls(t, proxy.port, `127.0.0.1:${origin.port}`, { ca: pki.operatorCa.cert, alpn: ['http/1.1'] })
    .then(async (socket) => {
      let text = ''
      socket.on('data', (chunk: Buffer) => { text += chunk.toString() })
      socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\n\r\n`)
      await new Promise((resolve) => socket.once('close', resolve))
      return text
    }, (error: Error & { code?: string }) => error.code ?? error.message)
  t.notMatch(outcome, /^HTTP\/1\.1 200/)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was forwarded')
})
