import { test } from 'tap'
import { resolveToLoopback, startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { expectTunnelRelays, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { capturedLog } from './helpers/captured-log'
import { closedPort } from './helpers/closed-port'

test('Report mode on destinations: what allowedHosts or deniedHosts would refuse is forwarded and logged "would-deny" with the list that would have refused it; a port outside allowedPorts is still refused', async (t) => {
  const log = capturedLog()
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const unlisted = await closedPort()
  const proxy = await startProxy(t, {
    resolver: resolveToLoopback,
    destinations: { mode: 'report', allowedHosts: ['allowed.test', 'denied.test'], deniedHosts: ['denied.test'], allowPrivateNetworks: true, allowedPorts: [origin.port, destination.port] }
  }, undefined, { logger: log.logger })

  const notListed = await rawExchange(proxy.port, `GET http://elsewhere.test:${origin.port}/reported HTTP/1.1\r\nHost: elsewhere.test:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(notListed.status, 200, 'a host allowedHosts leaves out is forwarded')
  t.equal(origin.requests[0]?.url, '/reported')
  await expectTunnelRelays(t, proxy.port, `denied.test:${destination.port}`, destination, 'a CONNECT to a denied host opens')
  const badPort = await rawExchange(proxy.port, `GET http://allowed.test:${unlisted}/ HTTP/1.1\r\nHost: allowed.test:${unlisted}\r\nConnection: close\r\n\r\n`)
  t.equal(badPort.status, 403, 'report mode does not lift allowedPorts')
  t.match(badPort.text, /details="port not allowed"/)

  await eventually(() => log.access().length === 3)
  t.match(log.access().find((entry) => entry.kind === 'forward' && entry.status === 200), {
    destination: `elsewhere.test:${origin.port}`, address: `127.0.0.1:${origin.port}`, decision: 'would-deny', reason: 'host not allowed', rule: 'destinations.allowedHosts'
  })
  t.match(log.access().find((entry) => entry.kind === 'tunnel'), {
    destination: `denied.test:${destination.port}`, address: `127.0.0.1:${destination.port}`, decision: 'would-deny', reason: 'host not allowed', rule: 'destinations.deniedHosts'
  })
  t.match(log.access().find((entry) => entry.status === 403), { decision: 'deny', reason: 'port not allowed', rule: 'destinations.allowedPorts' })
})
