import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy, startSentinel } from './helpers/servers'
import { openTunnel, type OpenTunnel } from './helpers/raw-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a client that closes mid-way through its CONNECT head is dropped without a crash, a dial or a leaked slot', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t)
  const truncated = connect(proxy.port, '127.0.0.1')
  truncated.on('error', () => {})
  truncated.resume()
  truncated.end(`CONNECT 127.0.0.1:${sentinel.port} HTTP/1.1\r\nHost: x\r\nX-Half: `)
  await new Promise<void>((resolve) => truncated.on('close', () => resolve()))
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
  // The healthy tunnel is the probe: the first connection the destination got must be its.
  let healthy: OpenTunnel | undefined
  await expectNothingDialedBefore(t, sentinel.accepts, 'the truncated CONNECT was never dialed', {
    send: async (marker) => {
      healthy = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`)
      t.equal(healthy.status, 200, 'still serving')
      healthy.socket.write(marker)
    }
  })
  healthy?.socket.destroy()
})
