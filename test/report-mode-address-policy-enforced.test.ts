import { test } from 'tap'
import { resolveToLoopback, startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { startCountingDestination } from './helpers/counting-destination'
import { eventually } from './helpers/eventually'
import { capturedLog } from './helpers/captured-log'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// A name an operator's list does not know, resolving to loopback (resolveToLoopback): what an
// attacker would use to reach the proxy's own machine through a policy that only reports.

test('Report mode never lifts the address policy: with allowPrivateNetworks false, a name resolving to 127.0.0.1 is refused with 403 destination_ip_prohibited (deny, rule destinations.allowPrivateNetworks) for http:// and CONNECT though the destination and user host lists only report; nothing is dialed', async (t) => {
  const log = capturedLog()
  const origin = await startOrigin(t)
  const destination = await startCountingDestination(t)
  const proxy = await startProxy(t, {
    resolver: resolveToLoopback,
    destinations: { mode: 'report', allowedHosts: ['listed.test'], allowedPorts: '*' },
    auth: { users: { trial: { password: 'pw', allowedHosts: ['listed.test'], mode: 'report' } } }
  }, undefined, { logger: log.logger })
  const credentials = { 'Proxy-Authorization': basic('trial', 'pw') }

  const forwarded = await rawExchange(proxy.port, `GET http://rebound.test:${origin.port}/ HTTP/1.1\r\nHost: rebound.test:${origin.port}\r\nProxy-Authorization: ${credentials['Proxy-Authorization']}\r\nConnection: close\r\n\r\n`)
  t.equal(forwarded.status, 403)
  t.match(forwarded.text, /error=destination_ip_prohibited; details="loopback address"/)
  const tunnel = await openTunnel(proxy.port, `rebound.test:${destination.port}`, credentials)
  t.equal(tunnel.status, 403)
  t.match(tunnel.head, /error=destination_ip_prohibited; details="loopback address"/i)
  tunnel.socket.destroy()
  await expectNothingDialedBefore(t, origin.accepts, 'the http:// request never reached the origin')
  await expectNothingDialedBefore(t, destination.accepts, 'the CONNECT never reached the destination')

  await eventually(() => log.access().length === 2)
  for (const entry of log.access()) {
    t.match(entry, { destination: /^rebound\.test:/, status: 403, errorType: 'destination_ip_prohibited', decision: 'deny', reason: 'loopback address', rule: 'destinations.allowPrivateNetworks' })
    t.notOk('address' in entry, 'no address was dialed')
  }
})
