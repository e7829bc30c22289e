import { test, type Test } from 'tap'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { startProxy } from './helpers/servers'

/** A destination that answers 413 as soon as the first bytes of a request arrive, and closes. */
async function startEarlyAnswer (t: Test): Promise<number> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.once('close', () => sockets.delete(socket))
    socket.once('data', () => socket.end('HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\ntoo large'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); server.close(() => resolve()) }))
  return (server.address() as AddressInfo).port
}

/** Starts an upload of 100,000 bytes with its first 1,000, and resolves with what the client got once it has a whole response (or the connection closed). */
function uploadAndRead (proxyPort: number, destinationPort: number, sendTheRest: boolean): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(proxyPort, '127.0.0.1')
    let text = ''
    socket.on('error', () => {})
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
      if (text.endsWith('too large')) {
        socket.destroy()
        resolve(text)
      }
    })
    socket.once('close', () => resolve(text))
    socket.write(`POST http://127.0.0.1:${destinationPort}/upload HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n${'a'.repeat(1000)}`)
    if (sendTheRest) socket.write('a'.repeat(99000))
  })
}

for (const sendTheRest of [false, true]) {
  test(`a destination that answers before the request body is complete has its answer passed on (client ${sendTheRest ? 'sends the rest' : 'waits'})`, async (t) => {
    const destinationPort = await startEarlyAnswer(t)
    const proxy = await startProxy(t)
    const text = await uploadAndRead(proxy.port, destinationPort, sendTheRest)
    t.match(text, /^HTTP\/1\.1 413 /, 'the client gets the destination\'s status')
    t.match(text, /too large$/, 'and its body')
  })
}
