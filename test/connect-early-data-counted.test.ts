import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy } from './helpers/servers'
import { once, readAll, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { capturedLog } from './helpers/captured-log'

test('CONNECT early data: the bytes a client sends with its CONNECT head count in the tunnel\'s bytes in, with the bytes sent after the 200', async (t) => {
  const log = capturedLog()
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { destinations: { allowedPorts: '*', allowPrivateNetworks: true } }, undefined, { logger: log.logger })
  const socket = connect(proxy.port, '127.0.0.1')
  socket.on('error', () => {})
  t.teardown(() => socket.destroy())
  socket.write(`CONNECT 127.0.0.1:${destination.port} HTTP/1.1\r\nHost: x\r\n\r\nearly|`)
  const upstream = await destination.nextConnection()
  const answered = new Promise<void>((resolve) => {
    let head = ''
    const onData = (chunk: Buffer): void => {
      head += chunk.toString('latin1')
      if (!head.includes('\r\n\r\n')) return
      socket.removeListener('data', onData)
      resolve()
    }
    socket.on('data', onData)
  })
  await answered
  socket.end('late')
  t.equal(await readAll(upstream), 'early|late', 'the early bytes first, then the rest, then the FIN')
  upstream.end()
  await once(socket, 'close')
  await eventually(() => log.access().length === 1)
  t.match(log.access()[0], { kind: 'tunnel', tunnel: 'opaque', status: 200, closeReason: 'closed', bytesIn: 10, bytesOut: 0 })
})
