// Type tests of the public API with tsd (`npm run test:types`, run by `npm test` before tap),
// against the declarations the package ships (dist/, built first): what an application writes
// against the package must compile, and what it must not write must fail to.
import type { SecureContext } from 'node:tls'
import Fastify, { type FastifyRequest } from 'fastify'
import { expectAssignable, expectError, expectNotAssignable, expectType } from 'tsd'
import { Redis } from 'ioredis'
import {
  CA_PROVIDER_DEFAULTS,
  CERTIFICATE_ERROR_CODES,
  EST_ERROR_CODES,
  createCaCertificateProvider,
  createEstCertificateProvider,
  createHeaderRulesTransform,
  createHostListSelector,
  DEFAULT_LIMITS,
  forwardProxy,
  ForwardProxyCertificateError,
  ForwardProxyOptionsError,
  PROXY_ERROR_STATUS,
  ProxyError,
  tlsInterception,
  type ForwardProxyCaCertificateProvider,
  type ForwardProxyCertificate,
  type ForwardProxyCertificateProvider,
  type ForwardProxyControl,
  type ForwardProxyDestination,
  type ForwardProxyDestinationFilter,
  type ForwardProxyEstCertificateProvider,
  type ForwardProxyIncomingResponse,
  type ForwardProxyInterception,
  type ForwardProxySecret,
  type ForwardProxySecretSource,
  type ForwardProxyInterceptionAddress,
  type ForwardProxyInterceptionSelector,
  type ForwardProxyIssuedLeaf,
  type ForwardProxyLimitOptions,
  type ForwardProxyOptions,
  type ForwardProxyOutgoingRequest,
  type ForwardProxyRequestTransform,
  type ForwardProxyUser,
  type ForwardProxyPolicyMode,
  type ForwardProxyRedisOptions,
  type ForwardProxyErrorCode,
  type ProxyErrorCode,
  type ProxyErrorType,
  type TlsInterceptionOptions
} from '../..'

const app = Fastify()

// forwardProxy options
void app.register(forwardProxy, {
  auth: { realm: 'egress', users: { alice: 's3cret' }, failureLimit: { maxFailures: 10, window: 60_000 } },
  destinations: { allowedHosts: ['*.example.com', '10.0.0.0/8'], deniedHosts: [], allowedPorts: [443], allowPrivateNetworks: false, allowedNetworks: ['fd00::/8'] },
  limits: {
    maxConcurrentTunnels: 100,
    maxConcurrentRequests: 100,
    maxStreamResets: 50,
    tunnelIdleTimeout: 1,
    httpActivityTimeout: 1,
    connectTimeout: 1,
    firstByteTimeout: 1
  },
  via: 'egress-1',
  resolver: async (hostname: string, signal: AbortSignal) => { void hostname; void signal; return [{ address: '192.0.2.1', family: 4 as const }] },
  propagateTraceContext: false
})
void app.register(forwardProxy, { auth: { validate: async (name, password, request) => name === 'a' && password === 'b' && request.ip !== '' } })
void app.register(forwardProxy, { auth: { validate: (name) => ({ name, tenant: 'acme' }) } })
expectError(app.register(forwardProxy, { destinations: { allowedPorts: ['443'] } }))
expectError(app.register(forwardProxy, { limits: { connectTimeout: '10s' } }))
expectError(createHeaderRulesTransform([{ hosts: ['a.example'], tlsOnly: 'yes' }]))
expectError(app.register(forwardProxy, { limits: { maxStreamResets: true } }))
// redis: a URL, or the application's ioredis client
void app.register(forwardProxy, { redis: { url: 'rediss://redis.internal:6380/0', password: 'pw', ca: Buffer.from(''), keyPrefix: 'egress:', onError: 'deny', timeout: 100, leaseTime: 10_000 } })
void app.register(forwardProxy, { redis: { client: new Redis() } })
expectAssignable<ForwardProxyRedisOptions>({ url: 'redis://127.0.0.1:6379/0' })
expectError(app.register(forwardProxy, { redis: { url: 'redis://127.0.0.1:6379/0', onError: 'retry' } }))
expectError(app.register(forwardProxy, { redis: { url: 6379 } }))
const secret: ForwardProxySecret = { name: 'github', value: 'ghp_x', hosts: ['api.github.com'], placeholder: 'PLACEHOLDER_GITHUB' }
void app.register(forwardProxy, { secrets: [secret, { name: 'openai', value: 'sk-x', hosts: ['api.openai.com'] }] })
void app.register(forwardProxy, { auth: { validate: (name) => ({ name, secrets: ['github'] }) } })
expectError(app.register(forwardProxy, { secrets: [{ name: 'github', value: 'x' }] }))
expectError(app.register(forwardProxy, { secrets: { github: secret } }))
const vault: ForwardProxySecretSource = { getValue: async (name, signal) => signal.aborted ? name : { value: 'from-vault', maxAge: 60_000 } }
void app.register(forwardProxy, { secrets: [{ name: 'vault', source: vault, hosts: ['api.example.com'] }] })
expectError<ForwardProxySecretSource>({ getValue: async () => 42 })
expectError(app.register(forwardProxy, { auth: { validate: (name) => ({ name, secrets: 'github' }) } }))
void app.register(forwardProxy, { auth: { users: { alice: 's3cret', 'agent-7': { password: 'pw7', allowedHosts: ['api.github.com'], secrets: ['github'], maxConcurrentTunnels: 20, requestsPerMinute: 600 } } } })
void app.register(forwardProxy, { auth: { validate: (name) => ({ name, allowedHosts: ['*.pypi.org'], requestsPerMinute: 60 }) } })
expectError(app.register(forwardProxy, { auth: { users: { agent: { allowedHosts: ['a.example'] } } } }))
expectError(app.register(forwardProxy, { auth: { users: { agent: { password: 'p', requestsPerMinute: '60' } } } }))
void app.register(forwardProxy, { destinations: { mode: 'report', allowedHosts: ['*.example.com'] }, auth: { users: { agent: { password: 'p', allowedHosts: ['a.example'], mode: 'report' } } } })
void app.register(forwardProxy, { auth: { validate: (name) => ({ name, allowedHosts: ['a.example'], mode: 'enforce' as const }) } })
expectError(app.register(forwardProxy, { destinations: { mode: 'audit' } }))
expectError(app.register(forwardProxy, { auth: { users: { agent: { password: 'p', mode: 'audit' } } } }))
expectAssignable<ForwardProxyPolicyMode>('report')
expectNotAssignable<ForwardProxyPolicyMode>('warn')
expectNotAssignable<ForwardProxyOptions>({ auth: { users: { alice: 1 } } })
expectAssignable<Required<ForwardProxyLimitOptions>>(DEFAULT_LIMITS)

// tlsInterception options: selectors, providers, transforms, filters
const selector: ForwardProxyInterceptionSelector = { shouldIntercept: (request, destination, signal) => request.proxyUser?.name === 'ci' && destination.port === 443 && !signal.aborted }
const asyncSelector: ForwardProxyInterceptionSelector = { shouldIntercept: async () => true }
const provider: ForwardProxyCertificateProvider = {
  getCertificate: async (destination, signal) => { void signal; return destination.host === 'api.example.com' ? { cert: 'PEM', key: 'PEM', chain: ['PEM'] } : null }
}
const transform: ForwardProxyRequestTransform = {
  transformRequest (request, destination, outgoing, signal) {
    expectType<FastifyRequest>(request)
    expectType<ForwardProxyDestination>(destination)
    expectType<ForwardProxyOutgoingRequest>(outgoing)
    expectType<AbortSignal>(signal)
    outgoing.headers.authorization = 'Bearer token'
    outgoing.headers['x-forwarded-tags'] = ['a', 'b']
  },
  async transformResponse (_request, _destination, response) {
    expectType<ForwardProxyIncomingResponse>(response)
    response.statusCode = 200
    delete response.headers['set-cookie']
  }
}
const filter: ForwardProxyDestinationFilter = { allowTunnel: async (_request, destination) => destination.host !== 'blocked.example' }
const interception: TlsInterceptionOptions = {
  selector: (request) => { void request; return asyncSelector },
  certificateProvider: () => provider,
  transforms: [transform, createHeaderRulesTransform([{ hosts: ['api.example.com'], set: { authorization: 'Bearer x' }, removeResponse: ['set-cookie'], tlsOnly: true }])],
  destinationFilters: [filter],
  clientProtocols: 'http1AndHttp2',
  handshakeTimeout: 5_000,
  passthroughOnClientRefusal: { after: 3, for: 600_000 },
  trustedDestinationCa: ['PEM'],
  checkDestinationCertificate: (certificate, error, destination) => error === null && certificate.subject.CN === destination.host
}
void app.register(tlsInterception, interception)
void app.register(tlsInterception, { selector, certificateProvider: provider })
expectError(app.register(tlsInterception, { clientProtocols: 'http3' }))
expectError(app.register(tlsInterception, { passthroughOnClientRefusal: { after: 3 } }))
expectNotAssignable<ForwardProxyRequestTransform>({ transformRequest: (request: FastifyRequest, destination: ForwardProxyDestination, outgoing: ForwardProxyOutgoingRequest) => { void request; void destination; outgoing.method = 1 as unknown as string; return 'done' } })
expectNotAssignable<ForwardProxyInterceptionSelector>({ shouldIntercept: () => 'yes' })
expectAssignable<ForwardProxyCertificate>({ cert: Buffer.from('PEM'), key: Buffer.from('PEM') })
expectAssignable<ForwardProxyCertificate>({} as SecureContext)
expectNotAssignable<ForwardProxyCertificate>({ cert: 'PEM' })

// Decorated services instead of options
app.decorate('forwardProxyInterceptionSelector', createHostListSelector(['*.example.com']))
app.decorate('forwardProxyCertificateProvider', provider)

// Providers of the package
const caProvider = createCaCertificateProvider({ cert: 'PEM', key: 'PEM', keyType: 'ecdsa-p256', validityDays: 7, onLeafIssued: (leaf) => { expectType<ForwardProxyIssuedLeaf>(leaf) } })
expectType<ForwardProxyCaCertificateProvider>(caProvider)
expectAssignable<ForwardProxyCertificateProvider>(caProvider)
expectType<Promise<SecureContext>>(caProvider.getCertificate({ host: 'a.example', port: 443 }, new AbortController().signal))
expectType<Promise<ForwardProxyIssuedLeaf>>(caProvider.getLeaf('a.example'))
expectError(createCaCertificateProvider({ cert: 'PEM', key: 'PEM', keyType: 'ed25519' }))
expectAssignable<number>(CA_PROVIDER_DEFAULTS.validityDays)
const estProvider = createEstCertificateProvider({ url: 'https://est.example/.well-known/est', username: 'proxy', password: 'secret' })
expectType<ForwardProxyEstCertificateProvider>(estProvider)
expectAssignable<ForwardProxyCertificateProvider>(estProvider)

// What hooks see: request.proxyUser, request.interception, request.proxyDestination
declare module '../..' {
  interface ForwardProxyUser {
    tenant?: string
  }
}
app.addHook('onRequest', async (request) => {
  expectType<ForwardProxyUser | null>(request.proxyUser)
  expectType<string | undefined>(request.proxyUser?.tenant)
  expectType<ForwardProxyInterception | null>(request.interception)
  expectType<ForwardProxyDestination | null>(request.proxyDestination)
  if (request.interception !== null) {
    expectType<string>(request.interception.destination.host)
    expectType<number>(request.interception.destination.port)
    expectError(request.interception.destination.host = 'elsewhere')
  }
  expectError(request.interception = null)
})
// The interception decision: read and changed by preHandler hooks after tlsInterception's
app.addHook('preHandler', async (request) => {
  expectType<'intercept' | 'opaque' | null>(request.tunnelMode)
  request.tunnelMode = 'opaque'
  expectError(request.tunnelMode = true)
})

// fastify.forwardProxy
expectType<ForwardProxyControl>(app.forwardProxy)
expectType<number>(app.forwardProxy.activeTunnels)
expectType<number>(app.forwardProxy.activeRequests)
expectType<ForwardProxyInterceptionAddress | null>(app.forwardProxy.interceptionAddress)
app.forwardProxy.addTransform(transform)
app.forwardProxy.addOwnListener({ address: () => null })
expectError(app.forwardProxy.addTransform({ transformRequest: 'nope' }))
expectError(app.forwardProxy.activeTunnels = 0)

// Errors
const refusal = new ProxyError('http_request_denied', 'not today', { status: 403, details: 'policy' })
expectType<ProxyErrorType>(refusal.errorType)
expectType<ProxyErrorCode>(refusal.code)
expectAssignable<ProxyErrorCode>('FFP_ERR_HTTP_REQUEST_DENIED')
expectNotAssignable<ProxyErrorCode>('FFP_ERR_NOT_A_TYPE')
expectType<'FFP_ERR_INVALID_OPTION'>(new ForwardProxyOptionsError('via', 'must be a string').code)
expectType<'FFP_ERR_CERTIFICATE_BAD_CA_KEY'>(CERTIFICATE_ERROR_CODES.bad_ca_key)
expectAssignable<ForwardProxyErrorCode>(new ForwardProxyCertificateError('mint_failed', 'm').code)
expectAssignable<ForwardProxyErrorCode>(EST_ERROR_CODES.est_refused)
expectAssignable<number>(PROXY_ERROR_STATUS.connection_limit_reached)
expectError(new ProxyError('not_a_type', 'x'))
expectAssignable<TypeError>(new ForwardProxyOptionsError('limits.connectTimeout', 'must be positive'))
expectAssignable<Error>(new ForwardProxyCertificateError('bad_ca_key', 'bad CA key'))
