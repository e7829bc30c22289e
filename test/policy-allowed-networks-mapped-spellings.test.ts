import { test } from 'tap'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// The same loopback address written as the IPv4-mapped IPv6 address a client may send instead.
const SPELLINGS = ['127.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]']

for (const [range, what] of [
  ['127.0.0.0/8', 'an IPv4 range allows the IPv4-mapped spelling of its addresses'],
  ['::ffff:127.0.0.0/104', 'an IPv4-mapped range is the IPv4 range it maps']
] as const) {
  test(`allowedNetworks: ${what}, over CONNECT and http://`, async (t) => {
    const origin = await startOrigin(t)
    const proxy = await startProxy(t, { destinations: { allowedPorts: '*', allowedNetworks: [range] } })
    for (const host of SPELLINGS) {
      const tunnel = await openTunnel(proxy.port, `${host}:${origin.port}`)
      t.equal(tunnel.status, 200, `CONNECT ${host}`)
      tunnel.socket.destroy()
      const forwarded = await rawExchange(proxy.port, `GET http://${host}:${origin.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
      t.equal(forwarded.status, 200, `GET http://${host}/`)
    }
  })
}

test('allowedNetworks: a mapped spelling of an address outside the allowed range is still refused, with nothing dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.2/32'] } })
  for (const host of SPELLINGS) {
    const tunnel = await openTunnel(proxy.port, `${host}:${sentinel.port}`)
    t.equal(tunnel.status, 403, `CONNECT ${host}`)
    t.match(tunnel.head, /error=destination_ip_prohibited; details="loopback address"/)
    tunnel.socket.destroy()
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was dialed')
})
