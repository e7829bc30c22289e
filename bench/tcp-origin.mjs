// Benchmark TCP destinations for the tunnel scenarios, on loopback. Prints one JSON line with
// three ports:
// - echo: writes back what it reads, ends when the client ends (tunnels/s);
// - blast: writes 64 MiB as fast as the socket takes it, then ends (downloads);
// - sink: discards what it reads and writes one byte per MiB received, so the client can count
//   delivered bytes; ends when the client ends (uploads).
import { createServer } from 'node:net'

const MiB = 1024 * 1024
const big = Buffer.alloc(64 * MiB, 'x')
const ack = Buffer.from('a')

function listen (onSocket) {
  const server = createServer({ noDelay: true }, (socket) => {
    socket.on('error', () => {})
    onSocket(socket)
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', 1024, () => resolve(server.address().port)))
}

const echo = await listen((socket) => socket.pipe(socket))
const blast = await listen((socket) => {
  socket.resume() // nothing is expected from the client; its end is read so the socket can close
  socket.end(big)
})
const sink = await listen((socket) => {
  let received = 0
  socket.on('data', (chunk) => {
    const before = Math.floor(received / MiB)
    received += chunk.length
    const acks = Math.floor(received / MiB) - before
    if (acks > 0) socket.write(acks === 1 ? ack : Buffer.alloc(acks, 'a'))
  })
  socket.on('end', () => socket.end())
})
process.stdout.write(JSON.stringify({ echo, blast, sink }) + '\n')
