import { test } from 'tap'
import { request } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { isEquivalentAuthority } from './helpers/internals'

test('a transform may set an equivalent Host (upper case, another IPv4 spelling, explicit port); it is sent as the transform wrote it', async (t) => {
  const origin = await startOrigin(t, undefined)
  const proxy = await startProxy(t, {
    resolver: async () => [{ address: '127.0.0.1', family: 4 }],
    transforms: [{
      transformRequest (request, _destination, outgoing) {
        outgoing.headers.host = String(request.headers['x-set-host'])
        delete outgoing.headers['x-set-host']
      }
    }]
  })
  const agent = absoluteFormAgent(t, proxy.url)
  const cases = [
    { target: `http://origin.test:${origin.port}/`, host: `ORIGIN.Test:${origin.port}` },
    { target: `http://127.0.0.1:${origin.port}/`, host: `127.1:${origin.port}` },
    { target: `http://127.0.0.1:${origin.port}/`, host: `127.0.0.1:${origin.port}` }
  ]
  for (const { target, host } of cases) {
    const res = await request(target, { dispatcher: agent, headers: { 'x-set-host': host } })
    t.equal(res.statusCode, 200, host)
    await res.body.dump()
    t.equal(origin.requests.at(-1)?.headers.host, host)
  }
})

test('an omitted default port is equivalent (80 for http, 443 for https); another port or host is not', async (t) => {
  t.ok(isEquivalentAuthority('Example.COM', { host: 'example.com', port: 80 }, 80))
  t.ok(isEquivalentAuthority('example.com:80', { host: 'example.com', port: 80 }, 80))
  t.ok(isEquivalentAuthority('example.com.', { host: 'example.com', port: 443 }, 443), 'trailing dot')
  t.ok(isEquivalentAuthority('[0:0::1]:443', { host: '::1', port: 443 }, 443), 'IPv6 spelling')
  t.notOk(isEquivalentAuthority('example.com', { host: 'example.com', port: 443 }, 80))
  t.notOk(isEquivalentAuthority('example.com:8443', { host: 'example.com', port: 443 }, 443))
  t.notOk(isEquivalentAuthority('user@example.com', { host: 'example.com', port: 80 }, 80))
  t.notOk(isEquivalentAuthority('example.com:', { host: 'example.com', port: 80 }, 80))
})

test('a Host spelled exactly as the destination, alone or with its port, names it; a longer name, another port or a bare IPv6 address does not', async (t) => {
  const named = { host: 'example.com', port: 8443 }
  t.ok(isEquivalentAuthority('example.com:8443', named, 443))
  t.ok(isEquivalentAuthority('example.com', { host: 'example.com', port: 443 }, 443))
  t.notOk(isEquivalentAuthority('example.com', named, 443), 'the omitted port is the default, not the destination\'s')
  t.notOk(isEquivalentAuthority('example.com:84430', named, 443))
  t.notOk(isEquivalentAuthority('example.com:844', named, 443))
  t.notOk(isEquivalentAuthority('example.com.evil.test:8443', named, 443))
  t.ok(isEquivalentAuthority('127.0.0.2:8443', { host: '127.0.0.2', port: 8443 }, 443))
  t.notOk(isEquivalentAuthority('127.0.0.20:8443', { host: '127.0.0.2', port: 8443 }, 443))
  const ipv6 = { host: '::1', port: 443 }
  t.notOk(isEquivalentAuthority('::1', ipv6, 443), 'an IPv6 Host must be bracketed')
  t.notOk(isEquivalentAuthority('::1:443', ipv6, 443), 'an IPv6 Host must be bracketed, with a port too')
  t.ok(isEquivalentAuthority('[::1]:443', ipv6, 443))
})
