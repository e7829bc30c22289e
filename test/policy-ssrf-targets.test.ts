import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'
import type { ForwardProxyResolver } from '../lib/index'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// SSRF targets under the default address policy (only the port rule is relaxed so the
// sentinel's port may be named). Every target must be refused before any connection.
const REFUSED_TARGETS = [
  '127.0.0.1', '[::1]', 'localhost', '0.0.0.0', '0',
  '2130706433', '0x7f000001', '0177.0.0.1', '127.1', '017700000001', '012.0.0.1',
  '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::127.0.0.1]', '[64:ff9b::a9fe:a9fe]', '[2002:a9fe:a9fe::]', '[::ffff:0:a9fe:a9fe]', '[::ffff:0:7f00:1]',
  '169.254.169.254', '[fd00:ec2::254]', '100.64.0.1', '10.0.0.1', '192.168.1.1', '172.16.0.1', '[fc00::1]',
  '[fe80::1]', '224.0.0.1', '255.255.255.255'
]

const resolver: ForwardProxyResolver = async (name) => {
  if (name === 'localhost') return [{ address: '127.0.0.1', family: 4 }]
  throw Object.assign(new Error(`unexpected lookup of ${name}`), { code: 'ENOTFOUND' })
}

test('Loopback, private, link-local, CGNAT, mapped and NAT64 targets get 403 destination_ip_prohibited over CONNECT, with no connection', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { destinations: { allowedPorts: '*' }, resolver })
  for (const host of REFUSED_TARGETS) {
    const tunnel = await openTunnel(proxy.port, `${host}:${sentinel.port}`)
    t.equal(tunnel.status, 403, `CONNECT ${host}`)
    t.match(tunnel.head, /proxy-status: fastify-forward-proxy; error=destination_ip_prohibited/i, `CONNECT ${host} reports the address refusal`)
    tunnel.socket.destroy()
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'no refused target was ever dialed')
})

test('The same targets get 403 destination_ip_prohibited as absolute-form http:// targets, with no connection', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { destinations: { allowedPorts: '*' }, resolver })
  for (const host of REFUSED_TARGETS) {
    const res = await rawExchange(proxy.port, `GET http://${host}:${sentinel.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(res.status, 403, `GET http://${host}`)
    t.match(res.text, /proxy-status: fastify-forward-proxy; error=destination_ip_prohibited/i, `GET http://${host} reports the address refusal`)
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'no refused target was ever dialed')
})

test('a zone identifier in an IPv6 target is not a host and gets 400', async (t) => {
  const proxy = await startProxy(t, { destinations: { allowedPorts: '*' }, resolver })
  const tunnel = await openTunnel(proxy.port, '[fe80::1%25eth0]:443')
  t.equal(tunnel.status, 400)
  tunnel.socket.destroy()
})

test('ports 25, 22 and 6379 are refused with 403 http_request_denied under the default ports', async (t) => {
  let lookups = 0
  const countingResolver: ForwardProxyResolver = async () => { lookups++; return [{ address: '127.0.0.9', family: 4 }] }
  const proxy = await startProxy(t, { destinations: {}, resolver: countingResolver })
  for (const port of [25, 22, 6379]) {
    const tunnel = await openTunnel(proxy.port, `example.com:${port}`)
    t.equal(tunnel.status, 403, `port ${port}`)
    t.match(tunnel.head, /error=http_request_denied; details="port not allowed"/)
    tunnel.socket.destroy()
  }
  t.equal(lookups, 0, 'a refused port is refused before any DNS lookup')
})
