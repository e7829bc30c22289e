import { test, type Test } from 'tap'
import type { Socket } from 'node:net'
import { LOOPBACK_TEST_POLICY, startProxy } from './helpers/servers'
import { basic, openTunnel } from './helpers/raw-client'
import { echoesThrough, startTcpDestination, type TcpDestination } from './helpers/tcp-destination'
import type { ForwardProxyOptions, ForwardProxyPolicyMode } from '../lib/index'

function options (users: ForwardProxyPolicyMode, destinations: ForwardProxyPolicyMode): ForwardProxyOptions {
  return {
    destinations: { ...LOOPBACK_TEST_POLICY, allowedHosts: ['listed.test'], mode: destinations },
    auth: { users: { trial: { password: 'pw', allowedHosts: ['listed.test'], mode: users } } }
  }
}

interface Tunnel { readonly socket: Socket, readonly upstream: Socket, readonly closed: Promise<void> }

async function open (t: Test, proxyPort: number, destination: TcpDestination): Promise<Tunnel> {
  const tunnel = await openTunnel(proxyPort, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': basic('trial', 'pw') })
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200, 'the tunnel the host lists would refuse opens')
  const upstream = await destination.nextConnection()
  return { socket: tunnel.socket, upstream, closed: new Promise((resolve) => tunnel.socket.once('close', () => resolve())) }
}

test('Report mode and open tunnels: a reconfiguration that keeps the host lists in report mode leaves a would-deny opaque tunnel open; switching the user\'s list, then the destination lists, to enforce closes the tunnels they refuse', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, options('report', 'report'))

  const first = await open(t, proxy.port, destination)
  proxy.app.forwardProxy.reconfigure(options('report', 'report'))
  await echoesThrough(first.socket, first.upstream, 'still open')
  t.pass('a reconfiguration in report mode closes nothing the lists only report on')
  proxy.app.forwardProxy.reconfigure(options('enforce', 'report'))
  await first.closed
  t.pass('enforcing the user\'s allowedHosts closes its tunnel outside them')

  proxy.app.forwardProxy.reconfigure(options('report', 'report'))
  const second = await open(t, proxy.port, destination)
  proxy.app.forwardProxy.reconfigure(options('report', 'enforce'))
  await second.closed
  t.pass('enforcing destinations.allowedHosts closes the tunnel to a host it leaves out')
})
