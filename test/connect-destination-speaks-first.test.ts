import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination, once } from './helpers/tcp-destination'

// A destination that writes as soon as it accepts (SMTP, SSH banners) may be read before the
// relay has started: those bytes must still reach the client, after the 200, in order.

/** Reads `socket` until `expected` bytes have arrived (counting `already`); resolves with them. */
function readBytes (socket: import('node:net').Socket, already: Buffer, expected: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks = [already]
    let length = already.length
    const check = (): void => {
      if (length < expected) return
      socket.removeListener('data', onData)
      resolve(Buffer.concat(chunks))
    }
    const onData = (chunk: Buffer): void => { chunks.push(chunk); length += chunk.length; check() }
    socket.on('data', onData)
    socket.once('close', () => reject(new Error(`closed after ${length} of ${expected} bytes`)))
    check()
  })
}

test('Opaque tunnel: a destination that speaks first has its banner relayed after the 200, then traffic goes both ways', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const accepted = destination.nextConnection().then((socket) => {
    socket.write('220 banner\r\n')
    socket.on('data', (chunk: Buffer) => socket.write(chunk))
    return socket
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.equal(tunnel.status, 200)
  await accepted
  const banner = await readBytes(tunnel.socket, tunnel.rest, 12)
  t.equal(banner.toString(), '220 banner\r\n')
  tunnel.socket.write('EHLO x\r\n')
  const echoed = await readBytes(tunnel.socket, Buffer.alloc(0), 8)
  t.equal(echoed.toString(), 'EHLO x\r\n')
  tunnel.socket.end()
})

test('Opaque tunnel: a destination that writes and closes at once has its bytes and its end relayed', async (t) => {
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  destination.nextConnection().then((socket) => socket.end('bye\r\n'), () => {})
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.equal(tunnel.status, 200)
  const chunks = [tunnel.rest]
  tunnel.socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  await once(tunnel.socket, 'end')
  t.equal(Buffer.concat(chunks).toString(), 'bye\r\n')
  tunnel.socket.end()
})
