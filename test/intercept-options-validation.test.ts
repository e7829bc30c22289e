import Fastify from 'fastify'
import { test } from 'tap'
import { forwardProxy, tlsInterception, ForwardProxyOptionsError, type TlsInterceptionOptions } from '../lib/index'

const provider = { getCertificate: () => null }

const cases: Array<[string, unknown, RegExp]> = [
  ['clientProtocols', { clientProtocols: 'http3' }, /option "clientProtocols" must be one of http1, http2, http1AndHttp2/],
  ['handshakeTimeout', { handshakeTimeout: 0 }, /option "handshakeTimeout" must be a positive integer/],
  ['handshakeTimeout', { handshakeTimeout: '10s' }, /option "handshakeTimeout"/],
  ['selector', { selector: { intercept: () => true } }, /option "selector" must be an object with a shouldIntercept/],
  ['certificateProvider', { certificateProvider: 'ca.pem' }, /option "certificateProvider" must be an object with a getCertificate/],
  ['destinationFilters[0]', { destinationFilters: [{}] }, /option "destinationFilters\[0\]" must be an object with an allowTunnel/],
  ['transforms[1]', { transforms: [{ transformRequest: () => {} }, { nothing: true }] }, /option "transforms\[1\]"/],
  ['passthroughOnClientRefusal', { passthroughOnClientRefusal: 3 }, /option "passthroughOnClientRefusal" must be an object \{ after, for \}/],
  ['passthroughOnClientRefusal.after', { passthroughOnClientRefusal: { after: 0, for: 1000 } }, /option "passthroughOnClientRefusal\.after" must be an integer from 1 to 1000/],
  ['passthroughOnClientRefusal.for', { passthroughOnClientRefusal: { after: 2 } }, /option "passthroughOnClientRefusal\.for" must be a positive integer of milliseconds/],
  ['passthroughOnClientRefusal key', { passthroughOnClientRefusal: { after: 2, for: 1000, forever: true } }, /option "passthroughOnClientRefusal\.forever" is not a known key/],
  ['unknown key', { interceptAll: true }, /option "interceptAll" is not a known tlsInterception option/]
]

for (const [name, options, message] of cases) {
  test(`tlsInterception options: a bad ${name} fails registration with an error naming it`, async (t) => {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    await app.register(forwardProxy)
    app.register(tlsInterception, { certificateProvider: provider, ...(options as TlsInterceptionOptions) })
    const error = await app.ready().then(() => null, (caught: unknown) => caught)
    t.ok(error instanceof ForwardProxyOptionsError, 'a ForwardProxyOptionsError')
    t.match((error as Error).message, message)
  })
}
