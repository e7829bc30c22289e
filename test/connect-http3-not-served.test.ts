import { test } from 'tap'
import { createSocket, type Socket as UdpSocket } from 'node:dgram'
import { randomBytes } from 'node:crypto'
import { startProxy, startSentinel } from './helpers/servers'
import { basic, openTunnel } from './helpers/raw-client'

/** A datagram shaped like a QUIC v1 Initial: long header, version 1, 8-byte DCID, padded to 1200 bytes. */
function quicInitialLike (): Buffer {
  const datagram = Buffer.alloc(1200)
  datagram[0] = 0xc3
  datagram.writeUInt32BE(0x00000001, 1)
  datagram[5] = 8
  randomBytes(8).copy(datagram, 6)
  return datagram
}

/**
 * Sends QUIC-looking datagrams on a connected UDP socket to `port` until the kernel reports
 * ECONNREFUSED (an ICMP port unreachable: nobody is bound there) or an answer arrives; gives up
 * after `attempts` tries, 20 ms apart.
 */
async function probeUdp (port: number, attempts = 50): Promise<'refused' | 'answered' | 'silent'> {
  const socket: UdpSocket = createSocket('udp4')
  let answered = false
  let refused = false
  // The kernel reports the ICMP error on the next send or, once reading, as an 'error' event.
  const noteRefusal = (error: NodeJS.ErrnoException | null): void => { if (error?.code === 'ECONNREFUSED') refused = true }
  socket.on('message', () => { answered = true })
  socket.on('error', noteRefusal)
  await new Promise<void>((resolve) => socket.connect(port, '127.0.0.1', resolve))
  try {
    for (let i = 0; i < attempts && !answered && !refused; i++) {
      noteRefusal(await new Promise<NodeJS.ErrnoException | null>((resolve) => socket.send(quicInitialLike(), (err) => resolve(err))))
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return refused ? 'refused' : answered ? 'answered' : 'silent'
  } finally {
    socket.close()
  }
}

test('HTTP/3 is not served: QUIC datagrams to the proxy port are refused by the kernel (no UDP listener) and no response advertises Alt-Svc', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } }, (app) => { app.get('/healthz', async () => 'ok') })
  t.equal(await probeUdp(proxy.port), 'refused', 'ICMP port unreachable: nothing holds the proxy port on UDP')

  // Control: the probe can tell a bound UDP port from a free one.
  const listener = createSocket('udp4')
  t.teardown(() => listener.close())
  await new Promise<void>((resolve) => listener.bind(0, '127.0.0.1', () => resolve()))
  t.equal(await probeUdp(listener.address().port, 5), 'silent', 'a bound UDP port is not reported refused')

  const health = await fetch(`${proxy.url}/healthz`)
  t.equal(health.headers.get('alt-svc'), null, 'app response: no Alt-Svc')
  const challenged = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`)
  t.equal(challenged.status, 407)
  t.notMatch(challenged.head, /alt-svc/i, '407: no Alt-Svc')
  challenged.socket.destroy()
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`, { 'Proxy-Authorization': basic('alice', 's3cret') })
  t.equal(tunnel.status, 200)
  t.notMatch(tunnel.head, /alt-svc/i, '200 Connection Established: no Alt-Svc')
  tunnel.socket.destroy()
})
