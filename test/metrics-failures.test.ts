import { test } from 'tap'
import { closedPort } from './helpers/closed-port'
import { startTcpDestination } from './helpers/tcp-destination'
import { installMetrics } from './helpers/metric-reader'
import { startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, staticProvider } from './helpers/intercepting-proxy'

test('Metrics: forward_proxy.auth.failures counts 407 answers by reason (missing_or_malformed, invalid_credentials), for CONNECT and http:// alike; a good password is not counted', async (t) => {
  const installed = installMetrics(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const missing = await openTunnel(proxy.port, '127.0.0.1:9')
  t.equal(missing.status, 407)
  missing.socket.destroy()
  const wrong = await openTunnel(proxy.port, '127.0.0.1:9', { 'Proxy-Authorization': basic('alice', 'wrong') })
  t.equal(wrong.status, 407)
  wrong.socket.destroy()
  const forwarded = await rawExchange(proxy.port, `GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nProxy-Authorization: ${basic('bob', 'nope')}\r\nConnection: close\r\n\r\n`)
  t.equal(forwarded.status, 407)
  const malformed = await rawExchange(proxy.port, 'GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nProxy-Authorization: Basic !!!\r\nConnection: close\r\n\r\n')
  t.equal(malformed.status, 407)
  const good = await rawExchange(proxy.port, `OPTIONS http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nMax-Forwards: 0\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\nConnection: close\r\n\r\n`)
  t.equal(good.status, 200, 'answered by the proxy itself after authentication')

  const metric = await installed.collect('forward_proxy.auth.failures')
  t.equal(metric?.descriptor.unit, '{request}')
  t.same(await installed.sums('forward_proxy.auth.failures'), {
    '{"forward_proxy.auth.reason":"invalid_credentials"}': 2,
    '{"forward_proxy.auth.reason":"missing_or_malformed"}': 2
  })
})

test('Metrics: forward_proxy.auth.failures counts the brute-force guard\'s 429 answers as rate_limited', async (t) => {
  const installed = installMetrics(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' }, failureLimit: { maxFailures: 1, window: 600_000 } } })
  const statuses: number[] = []
  for (const password of ['wrong', 's3cret']) {
    const tunnel = await openTunnel(proxy.port, '127.0.0.1:9', { 'Proxy-Authorization': basic('alice', password) })
    statuses.push(tunnel.status)
    tunnel.socket.destroy()
  }
  t.same(statuses, [407, 429])
  t.same(await installed.sums('forward_proxy.auth.failures'), {
    '{"forward_proxy.auth.reason":"invalid_credentials"}': 1,
    '{"forward_proxy.auth.reason":"rate_limited"}': 1
  })
})

test('Metrics: a user\'s own limits (maxConcurrentTunnels, requestsPerMinute) answer 429 without counting as authentication failures', async (t) => {
  const installed = installMetrics(t)
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { auth: { users: { agent: { password: 'pw', maxConcurrentTunnels: 1, requestsPerMinute: 3 } } } })
  const auth = { 'Proxy-Authorization': basic('agent', 'pw') }
  const held = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, auth)
  t.teardown(() => { held.socket.destroy() })
  const overTunnels = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, auth)
  overTunnels.socket.destroy()
  const third = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, auth)
  third.socket.destroy()
  const overRate = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, auth)
  overRate.socket.destroy()
  t.same([held.status, overTunnels.status, third.status, overRate.status], [200, 429, 429, 429])
  t.match(overRate.head, /details="request rate limit of this user reached"/)
  t.same(await installed.sums('forward_proxy.auth.failures'), {}, 'no authentication failure counted')
})

test('Metrics: forward_proxy.policy.refusals counts 403 refusals by reason: host, port, address (an IP literal and a name resolving to loopback) and filter', async (t) => {
  const installed = installMetrics(t)
  const pki = await makeInterceptionPki(t)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: {
      destinations: { deniedHosts: ['denied.example'], allowedPorts: [80, 443] },
      resolver: async () => [{ address: '127.0.0.1', family: 4 }]
    },
    interception: {
      certificateProvider: staticProvider(pki),
      destinationFilters: [{ allowTunnel: (_request, destination) => destination.host !== 'filtered.example' }]
    }
  })
  const connect = async (target: string): Promise<number> => {
    const tunnel = await openTunnel(proxy.port, target)
    tunnel.socket.destroy()
    return tunnel.status
  }
  t.equal(await connect('denied.example:443'), 403)
  t.equal(await connect('allowed.example:25'), 403)
  t.equal(await connect('127.0.0.1:443'), 403)
  t.equal(await connect('filtered.example:443'), 403)
  const resolvedToLoopback = await rawExchange(proxy.port, 'GET http://loopback.example/ HTTP/1.1\r\nHost: loopback.example\r\nConnection: close\r\n\r\n')
  t.equal(resolvedToLoopback.status, 403)
  t.match(resolvedToLoopback.text, /destination_ip_prohibited/)
  const trace = await rawExchange(proxy.port, 'TRACE http://allowed.example/ HTTP/1.1\r\nHost: allowed.example\r\nMax-Forwards: 0\r\nConnection: close\r\n\r\n')
  t.equal(trace.status, 405, 'TRACE at Max-Forwards 0 is not a policy refusal')

  t.same(await installed.sums('forward_proxy.policy.refusals'), {
    '{"forward_proxy.policy.reason":"address"}': 2,
    '{"forward_proxy.policy.reason":"filter"}': 1,
    '{"forward_proxy.policy.reason":"host"}': 1,
    '{"forward_proxy.policy.reason":"port"}': 1
  })
  t.equal(await installed.collect('forward_proxy.destination.connect.failures'), undefined, 'a refusal is not a connect failure')
})

test('Metrics: forward_proxy.destination.connect.failures counts failed destination connections by Proxy-Status error type (connection_refused for a tunnel and an http:// request, dns_error)', async (t) => {
  const installed = installMetrics(t)
  const port = await closedPort()
  const proxy = await startProxy(t, {
    resolver: async (host) => {
      if (host === 'nowhere.example') throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
      return [{ address: '127.0.0.1', family: 4 }]
    }
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${port}`)
  t.equal(tunnel.status, 502)
  tunnel.socket.destroy()
  const forwarded = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)
  t.equal(forwarded.status, 502)
  t.match(forwarded.text, /error=connection_refused/)
  const unresolved = await openTunnel(proxy.port, 'nowhere.example:443')
  t.equal(unresolved.status, 502)
  unresolved.socket.destroy()

  t.same(await installed.sums('forward_proxy.destination.connect.failures'), {
    '{"error.type":"connection_refused"}': 2,
    '{"error.type":"dns_error"}': 1
  })
})
