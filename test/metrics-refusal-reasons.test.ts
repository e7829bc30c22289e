import { test } from 'tap'
import { installMetrics } from './helpers/metric-reader'
import { resolveToLoopback, startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { closedPort } from './helpers/closed-port'

const outcome = (kind: string, name: string, reason?: string): string =>
  JSON.stringify(reason === undefined
    ? { 'forward_proxy.kind': kind, 'forward_proxy.outcome': name }
    : { 'forward_proxy.kind': kind, 'forward_proxy.outcome': name, 'forward_proxy.reason': reason })

test('metrics: refused and failed outcomes carry forward_proxy.reason (a secret toward a host it is not granted to, a user\'s hosts, its request rate, its tunnel cap, the proxy\'s tunnel cap, the destination policy, authentication, an unreachable destination); a user\'s 429 is not an authentication failure', async (t) => {
  const installed = installMetrics(t)
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const closed = await closedPort()
  const proxy = await startProxy(t, {
    destinations: { allowPrivateNetworks: true, allowedPorts: '*', deniedHosts: ['denied.test'] },
    resolver: resolveToLoopback,
    limits: { maxConcurrentTunnels: 2 },
    secrets: [{ name: 'api', value: 'sk-live-5b2d4c6f8a0b9e7d', hosts: ['api.test'], placeholder: 'PLACEHOLDER_API_KEY' }],
    auth: {
      users: {
        alice: 'pw-a',
        agent: { password: 'pw-g', allowedHosts: ['origin.test'], requestsPerMinute: 1 },
        tunneler: { password: 'pw-t', maxConcurrentTunnels: 1 }
      },
      failureLimit: false
    }
  })
  const as = (user: string, password: string): string => `Proxy-Authorization: ${basic(user, password)}\r\n`
  const get = async (target: string, headers: string): Promise<number> => {
    const host = new URL(target).host
    return (await rawExchange(proxy.port, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\n${headers}Connection: close\r\n\r\n`)).status
  }
  const tunnel = async (target: string, user: string, password: string): Promise<number> => {
    const opened = await openTunnel(proxy.port, target, { 'Proxy-Authorization': basic(user, password) })
    t.teardown(() => opened.socket.destroy())
    return opened.status
  }
  const alice = as('alice', 'pw-a')
  const agent = as('agent', 'pw-g')

  t.equal(await get(`http://origin.test:${origin.port}/`, `${alice}Authorization: Bearer PLACEHOLDER_API_KEY\r\n`), 403, 'a placeholder toward a host its secret is not granted to')
  t.equal(await get(`http://elsewhere.test:${origin.port}/`, agent), 403, 'a host outside the user\'s allowedHosts')
  t.equal(await get(`http://origin.test:${origin.port}/1`, agent), 200)
  t.equal(await get(`http://origin.test:${origin.port}/2`, agent), 429, 'the user\'s requestsPerMinute reached')
  t.equal(await tunnel(`tunnel.test:${destination.port}`, 'tunneler', 'pw-t'), 200)
  t.equal(await tunnel(`tunnel.test:${destination.port}`, 'tunneler', 'pw-t'), 429, 'the user\'s maxConcurrentTunnels reached')
  t.equal(await tunnel(`tunnel.test:${destination.port}`, 'alice', 'pw-a'), 200)
  t.equal(await tunnel(`tunnel.test:${destination.port}`, 'alice', 'pw-a'), 503, 'the proxy\'s maxConcurrentTunnels reached')
  t.equal(await tunnel('denied.test:443', 'alice', 'pw-a'), 403, 'a host the destination policy denies')
  t.equal(await get(`http://origin.test:${origin.port}/`, ''), 407, 'no credentials')
  t.equal(await get(`http://origin.test:${origin.port}/`, as('alice', 'wrong')), 407, 'wrong credentials')
  t.equal(await get(`http://origin.test:${closed}/`, alice), 502, 'nothing listens there')

  t.strictSame(await installed.sums('forward_proxy.request.outcomes'), {
    [outcome('forward', 'refused', 'secret_destination')]: 1,
    [outcome('forward', 'refused', 'user_hosts')]: 1,
    [outcome('forward', 'answered')]: 1,
    [outcome('forward', 'refused', 'user_rate_limit')]: 1,
    [outcome('connect', 'tunnel')]: 2,
    [outcome('connect', 'refused', 'user_tunnel_limit')]: 1,
    [outcome('connect', 'failed', 'tunnel_limit')]: 1,
    [outcome('connect', 'refused', 'destination_policy')]: 1,
    [outcome('forward', 'refused', 'auth')]: 2,
    [outcome('forward', 'failed', 'destination_error')]: 1
  })
  t.strictSame(await installed.sums('forward_proxy.auth.failures'), {
    '{"forward_proxy.auth.reason":"missing_or_malformed"}': 1,
    '{"forward_proxy.auth.reason":"invalid_credentials"}': 1
  }, 'only the two 407s are authentication failures: the user\'s 429s are not')
})
