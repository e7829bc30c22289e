import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'
import type { ForwardProxyResolver } from '../lib/index'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// Only the canonical name is ever looked up; any other spelling reaching the resolver fails the test.
const lookups: string[] = []
const resolver: ForwardProxyResolver = async (name) => {
  lookups.push(name)
  return [{ address: '127.0.0.1', family: 4 }]
}

test('[::], upper-case and trailing-dot spellings of loopback get 403 destination_ip_prohibited over CONNECT and http://; only canonical names are looked up; nothing dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { destinations: { allowedPorts: '*' }, resolver })
  lookups.length = 0
  for (const host of ['[::]', '[0::0]', 'LOCALHOST', 'localhost.', 'LocalHost.', '127.0.0.1.', '0x7F.1', '0X7F000001', '[::FFFF:127.0.0.1]', '[0:0:0:0:0:ffff:7f00:1]']) {
    const tunnel = await openTunnel(proxy.port, `${host}:${sentinel.port}`)
    t.equal(tunnel.status, 403, `CONNECT ${host}`)
    t.match(tunnel.head, /proxy-status: fastify-forward-proxy; error=destination_ip_prohibited/i, `CONNECT ${host}`)
    tunnel.socket.destroy()
    const forwarded = await rawExchange(proxy.port, `GET http://${host}:${sentinel.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(forwarded.status, 403, `GET http://${host}`)
    t.match(forwarded.text, /proxy-status: fastify-forward-proxy; error=destination_ip_prohibited/i, `GET http://${host}`)
  }
  t.same([...new Set(lookups)], ['localhost'], 'every spelling of localhost was looked up as "localhost"')
  await expectNothingDialedBefore(t, sentinel.accepts, 'no spelling of loopback was dialed')
})

test('host patterns judge the canonical name: upper case, trailing dots and punycode of a denied host are denied; a suffix trick and an IDN look-alike are not the allowed name', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {
    destinations: { allowedHosts: ['*.example.com', 'bücher.example'], deniedHosts: ['denied.example.com'], allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
    resolver
  })
  const denied = ['DENIED.EXAMPLE.COM', 'denied.example.com.', 'Denied.Example.Com.', 'example.com.evil.net', 'example.com', 'xn--xample-2of.com', 'evil.net']
  for (const host of denied) {
    const tunnel = await openTunnel(proxy.port, `${host}:${sentinel.port}`)
    t.equal(tunnel.status, 403, `CONNECT ${host}`)
    t.match(tunnel.head, /proxy-status: fastify-forward-proxy; error=http_request_denied/i, `CONNECT ${host}`)
    tunnel.socket.destroy()
  }
  // A Cyrillic "е" in the request line: refused by the parser or by the policy, never dialed.
  const lookalike = await rawExchange(proxy.port, Buffer.from(`CONNECT www.\u0435xample.com:${sentinel.port} HTTP/1.1\r\nHost: x\r\n\r\n`, 'utf8'))
  t.ok(lookalike.status === 400 || lookalike.status === 403, `IDN look-alike of www.example.com: ${lookalike.status}`)
  await expectNothingDialedBefore(t, sentinel.accepts, 'no denied spelling was dialed')

  for (const host of ['www.example.com.', 'WWW.EXAMPLE.COM', 'xn--bcher-kva.example', 'XN--BCHER-KVA.EXAMPLE.']) {
    const tunnel = await openTunnel(proxy.port, `${host}:${sentinel.port}`)
    t.equal(tunnel.status, 200, `CONNECT ${host}: the same name as an allowed pattern`)
    tunnel.socket.destroy()
  }
})
