// Type-level tests of the public surface, checked by `npm test` (its typecheck step).
// Each @ts-expect-error line must fail to compile, or the typecheck fails.
import { createServer } from 'node:http'
import { createSecureServer, createServer as createHttp2Server } from 'node:http2'
import Fastify, { type FastifyRequest } from 'fastify'
import { forwardProxy, ForwardProxyOptionsError, type ForwardProxyDestination, type ForwardProxyOptions, type ForwardProxyUser } from '../../lib/index'

const app = Fastify()
void app.register(forwardProxy, { auth: { users: { alice: 's3cret' } }, destinations: { allowedPorts: '*' } })
void app.register(forwardProxy, { auth: { validate: async (name: string, password: string, request: FastifyRequest) => name === 'a' && password === 'b' && request.ip !== '' } })
// @ts-expect-error allowedPorts takes numbers or '*'
void app.register(forwardProxy, { destinations: { allowedPorts: ['80'] } })
// @ts-expect-error limits are numbers of milliseconds
const badLimits: ForwardProxyOptions = { limits: { connectTimeout: '10s' } }
void badLimits

app.addHook('preHandler', async (request) => {
  const user: ForwardProxyUser | null = request.proxyUser
  const destination: ForwardProxyDestination | null = request.proxyDestination
  if (destination !== null) {
    const port: number = destination.port
    void port
    // @ts-expect-error the destination is read-only
    destination.host = 'elsewhere'
  }
  void user
})

const tunnels: number = app.forwardProxy.activeTunnels
void tunnels
const error = new ForwardProxyOptionsError('limits.connectTimeout', 'must be positive')
const isTypeError: TypeError = error
const option: string = error.option
void isTypeError
void option

// Extra servers: HTTP/1.1 plain or TLS, and HTTP/2 over TLS.
app.forwardProxy.attachServer(createServer())
app.forwardProxy.attachServer(createSecureServer({ allowHTTP1: true }))
// @ts-expect-error a cleartext HTTP/2 server cannot carry HTTP/2 CONNECT
app.forwardProxy.attachServer(createHttp2Server())

// An HTTP/2 Fastify app takes the plugin too.
const h2app = Fastify({ http2: true, https: { allowHTTP1: true } })
void h2app.register(forwardProxy, {})
