import { connect } from 'node:net'
import { connect as tlsConnect, type TLSSocket } from 'node:tls'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { test, type Test } from 'tap'
import { forwardProxy, tlsInterception } from '../lib/index'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin, staticProvider } from './helpers/intercepting-proxy'
import { startOrderedDestination } from './helpers/ordered-destination'
import { openTunnel } from './helpers/raw-client'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'
import { eventually } from './helpers/eventually'
import { within } from './helpers/within'
import { deferred } from './helpers/deferred'

/** The issuer of the certificate a client sees through a tunnel: who terminated its TLS. */
async function issuerSeenThrough (port: number, target: string, headers: Record<string, string>, pki: InterceptionPki): Promise<string> {
  const tunnel = await openTunnel(port, target, headers)
  if (tunnel.status !== 200) throw new Error(`CONNECT answered ${tunnel.status}`)
  const socket = await new Promise<TLSSocket>((resolve, reject) => {
    const tls = tlsConnect({ socket: tunnel.socket, ca: [pki.destinationCa.cert, pki.operatorCa.cert], checkServerIdentity: () => undefined })
    tls.once('secureConnect', () => resolve(tls))
    tls.once('error', reject)
  })
  const issuer = String(socket.getPeerCertificate().issuer.CN)
  socket.destroy()
  return issuer
}

async function listen (t: Test, app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return (app.server.address() as AddressInfo).port
}

test('the interception decision is made as the proxy admits a CONNECT: hooks from preParsing on see it whether added before or after tlsInterception (onRequest hooks see null), and what they leave is what happens', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const provider = staticProvider(pki)
  const seen: Record<string, Array<string | null>> = { onRequest: [], preParsing: [], preValidation: [], earlyPreHandler: [], latePreHandler: [] }
  const app = Fastify({ logger: false })
  app.addHook('onRequest', async (request) => {
    if (request.method === 'CONNECT') seen.onRequest?.push(request.tunnelMode)
  })
  app.addHook('preParsing', async (request) => {
    if (request.method === 'CONNECT') seen.preParsing?.push(request.tunnelMode)
  })
  app.addHook('preValidation', async (request) => {
    if (request.method === 'CONNECT') seen.preValidation?.push(request.tunnelMode)
  })
  app.addHook('preHandler', async (request) => {
    if (request.method !== 'CONNECT') return
    seen.earlyPreHandler?.push(request.tunnelMode)
    if (request.headers['x-early-override'] !== undefined) request.tunnelMode = request.headers['x-early-override'] === 'intercept' ? 'intercept' : 'opaque'
  })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.register(tlsInterception, {
    trustedDestinationCa: pki.destinationCa.cert,
    certificateProvider: provider,
    selector: { shouldIntercept: (request) => request.headers['x-selector'] === 'yes' }
  })
  app.addHook('preHandler', async (request) => {
    if (request.method !== 'CONNECT') return
    seen.latePreHandler?.push(request.tunnelMode)
    const override = request.headers['x-override']
    if (override !== undefined) request.tunnelMode = override === 'intercept' ? 'intercept' : 'opaque'
  })
  const port = await listen(t, app)
  const target = `127.0.0.1:${origin.port}`
  const destinationIssuer = 'Interception Test Destination CA'

  const selected = await issuerSeenThrough(port, target, { 'x-selector': 'yes' }, pki)
  t.not(selected, destinationIssuer, 'the selector\'s yes: intercepted (the operator CA\'s leaf)')
  t.same(provider.asked, [target])

  t.equal(await issuerSeenThrough(port, target, { 'x-selector': 'yes', 'x-override': 'opaque' }, pki), destinationIssuer, 'a later hook\'s "opaque": relayed opaquely, the origin\'s own certificate')
  t.same(provider.asked, [target], 'the provider was not asked for the tunnel the hook turned opaque')

  t.equal(await issuerSeenThrough(port, target, { 'x-selector': 'no', 'x-early-override': 'intercept' }, pki), selected, 'a hook added before tlsInterception: its "intercept" holds though the selector declined')
  t.same(provider.asked, [target, target])

  t.same(seen.onRequest, [null, null, null], 'onRequest hooks run before the CONNECT is admitted')
  t.same(seen.preParsing, ['intercept', 'intercept', 'opaque'], 'preParsing hooks see the selector\'s answer')
  t.same(seen.preValidation, ['intercept', 'intercept', 'opaque'])
  t.same(seen.earlyPreHandler, ['intercept', 'intercept', 'opaque'], 'a preHandler hook added before tlsInterception sees it too')
  t.same(seen.latePreHandler, ['intercept', 'intercept', 'intercept'], 'a later hook sees what an earlier one set')
})

test('without tlsInterception request.tunnelMode is "opaque" for every CONNECT, and a hook that sets it to "intercept" gets 500 proxy_internal_error with nothing dialed', async (t) => {
  const destination = await startOrderedDestination(t)
  const seen: Array<string | null> = []
  const app = Fastify({ logger: false })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  app.addHook('preHandler', async (request) => {
    if (request.method !== 'CONNECT') return
    seen.push(request.tunnelMode)
    if (request.headers['x-intercept'] !== undefined) request.tunnelMode = 'intercept'
  })
  const port = await listen(t, app)
  const refused = await openTunnel(port, `127.0.0.1:${destination.port}`, { 'x-intercept': '1' })
  t.equal(refused.status, 500)
  t.match(refused.head, /proxy-status: fastify-forward-proxy; error=proxy_internal_error/i)
  refused.socket.destroy()
  const probe = await openTunnel(port, `127.0.0.1:${destination.port}`)
  t.teardown(() => probe.socket.destroy())
  t.equal(probe.status, 200)
  probe.socket.write('probe')
  t.equal(await destination.indexOfSender('probe'), 0, 'nothing was dialed for the refused CONNECT')
  t.same(seen, ['opaque', 'opaque'])
  await eventually(() => app.forwardProxy.activeTunnels === 1)
})

test('a CONNECT answered by an application hook after admission gives its tunnel slot back; so does one whose client leaves while a hook runs, and nothing is dialed for it', async (t) => {
  const destination = await startOrderedDestination(t)
  const released = deferred()
  const holdingStarted = deferred()
  const app = Fastify({ logger: false })
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY, limits: { maxConcurrentTunnels: 1 } })
  app.addHook('preHandler', async (request, reply) => {
    if (request.headers['x-deny'] !== undefined) return await reply.code(403).send('no')
    if (request.headers['x-hold'] !== undefined) {
      holdingStarted.resolve()
      await released.promise
    }
  })
  const port = await listen(t, app)
  const target = `127.0.0.1:${destination.port}`

  const denied = await openTunnel(port, target, { 'x-deny': '1' })
  t.equal(denied.status, 403)
  // The client is still connected: the slot comes back with the answer, not with the connection.
  await eventually(() => app.forwardProxy.activeTunnels === 0)
  t.equal(denied.socket.destroyed, false)
  denied.socket.destroy()

  const socket = connect(port, '127.0.0.1', () => socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nX-Hold: 1\r\n\r\n`))
  socket.on('error', () => {})
  await within(holdingStarted.promise, 'the hook to start holding the CONNECT')
  t.equal(app.forwardProxy.activeTunnels, 1, 'the slot is held while later hooks run (the limit of 1 is reached)')
  socket.resetAndDestroy()
  await eventually(() => app.forwardProxy.activeTunnels === 0)
  released.resolve()

  const probe = await openTunnel(port, target)
  t.teardown(() => probe.socket.destroy())
  t.equal(probe.status, 200, 'the limit of 1 admits the next CONNECT')
  probe.socket.write('probe')
  t.equal(await destination.indexOfSender('probe'), 0, 'nothing was dialed for the CONNECTs answered by the hook or left by their client')
})

test('tlsInterception registered in an inner plugin context fails registration', async (t) => {
  const pki = await makeInterceptionPki(t)
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  app.register(async (inner) => {
    await inner.register(tlsInterception, { trustedDestinationCa: pki.destinationCa.cert, certificateProvider: staticProvider(pki) })
  })
  await t.rejects(async () => { await app.ready() }, /register tlsInterception in the same plugin context as forwardProxy/)
})
