import { test } from 'tap'
import { resolveToLoopback, startOrigin, startProxy } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'
import { expectTunnelRelays, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { capturedLog } from './helpers/captured-log'

function get (port: number, target: string, headers: Record<string, string>): Promise<{ status: number, text: string }> {
  const lines = [`GET ${target} HTTP/1.1`, `Host: ${new URL(target).host}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), 'Connection: close']
  return rawExchange(port, `${lines.join('\r\n')}\r\n\r\n`)
}

test('Report mode on a user: a request and a CONNECT outside its allowedHosts are forwarded and logged "would-deny" with the reason and rule enforcement would give; its requestsPerMinute still refuses, and a user in enforce mode is still refused', async (t) => {
  const log = capturedLog()
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, {
    resolver: resolveToLoopback,
    auth: {
      users: {
        trial: { password: 'pw-t', allowedHosts: ['allowed.test'], requestsPerMinute: 3, mode: 'report' },
        strict: { password: 'pw-s', allowedHosts: ['allowed.test'] }
      }
    }
  }, undefined, { logger: log.logger })
  const trial = { 'Proxy-Authorization': basic('trial', 'pw-t') }
  const strict = { 'Proxy-Authorization': basic('strict', 'pw-s') }

  const forwarded = await get(proxy.port, `http://outside.test:${origin.port}/reported`, trial)
  t.equal(forwarded.status, 200, 'the request its allowedHosts would refuse is forwarded')
  t.equal(origin.requests[0]?.url, '/reported')
  await expectTunnelRelays(t, proxy.port, `outside.test:${destination.port}`, destination, 'so is the CONNECT', trial)
  t.equal((await get(proxy.port, `http://allowed.test:${origin.port}/allowed`, trial)).status, 200)
  t.equal((await get(proxy.port, `http://allowed.test:${origin.port}/fourth`, trial)).status, 429, 'report mode does not lift the request rate')
  t.equal((await get(proxy.port, `http://outside.test:${origin.port}/strict`, strict)).status, 403, 'a user in enforce mode is refused')
  t.equal(origin.requests.length, 2, 'only the two admitted requests reached the origin')

  await eventually(() => log.access().length === 5)
  const [reported, allowed, limited, refused] = log.access().filter((entry) => entry.kind === 'forward')
  const wouldDeny = { decision: 'would-deny', reason: 'host not allowed for this user', rule: 'users.trial.allowedHosts' }
  t.match(reported, { user: 'trial', destination: `outside.test:${origin.port}`, address: `127.0.0.1:${origin.port}`, status: 200, ...wouldDeny })
  t.match(log.access().find((entry) => entry.kind === 'tunnel'), { user: 'trial', address: `127.0.0.1:${destination.port}`, status: 200, ...wouldDeny })
  t.match(allowed, { user: 'trial', status: 200, decision: 'allow' })
  t.match(limited, { user: 'trial', status: 429, decision: 'deny', rule: 'users.trial.requestsPerMinute' })
  t.match(refused, { user: 'strict', status: 403, decision: 'deny', reason: 'host not allowed for this user', rule: 'users.strict.allowedHosts' })
})
