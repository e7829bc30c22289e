// The floor for an opaque CONNECT relay in Node: a bare `net` server that answers every CONNECT
// with 200, dials the target and relays with `pipe()` both ways, nothing else (no parsing beyond
// the request line, no policy, no timers). Prints its port. Used by bench/relay-cpu.mjs.
import { connect, createServer } from 'node:net'

const server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
  client.on('error', () => {})
  let head = Buffer.alloc(0)
  const onData = (chunk) => {
    head = Buffer.concat([head, chunk])
    const end = head.indexOf('\r\n\r\n')
    if (end === -1) return
    client.removeListener('data', onData)
    client.pause()
    const [host, port] = head.subarray(0, end).toString('latin1').split(' ')[1].split(':')
    const rest = head.subarray(end + 4)
    const destination = connect({ host, port: Number(port), allowHalfOpen: true, noDelay: true }, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (rest.length > 0) destination.write(rest)
      client.pipe(destination)
      destination.pipe(client)
    })
    destination.on('error', () => client.destroy())
    client.on('close', () => destination.destroy())
  }
  client.on('data', onData)
})
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`))
