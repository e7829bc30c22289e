// Opens `count` CONNECT tunnels through the proxy and keeps them open and idle until stdin
// closes. Opaque: the tunnel only. Intercepted (`ca` given): TLS inside the tunnel and one
// keep-alive GET /small, so the proxy holds both TLS sides and its destination connection.
// Argument: JSON { proxyPort, host, port, count, ca? }. Prints one JSON line
// { opened, errors, firstError, seconds } once every tunnel is open (or failed).
import { readFileSync } from 'node:fs'
import { getHead, openTunnel, runPool, startTls } from './connect-tunnel.mjs'

const { proxyPort, host, port, count, ca: caPath } = JSON.parse(process.argv[2])
const ca = caPath === undefined ? undefined : readFileSync(caPath)
const held = []
const started = performance.now()
const failures = await runPool(count, 64, async () => {
  const socket = await openTunnel(proxyPort, host, port)
  socket.on('error', () => {})
  if (ca === undefined) {
    held.push(socket)
    return
  }
  const tls = await startTls(socket, host, ca)
  tls.on('error', () => {})
  const head = await getHead(tls, `${host}:${port}`, '/small')
  if (!head.startsWith('HTTP/1.1 200')) throw new Error(`GET /small: ${head.split('\r\n')[0]}`)
  held.push(tls)
})
const seconds = (performance.now() - started) / 1000
process.stdout.write(JSON.stringify({ opened: held.length, errors: failures.length, firstError: failures[0]?.message, seconds }) + '\n')
process.stdin.resume()
process.stdin.once('end', () => { for (const s of held) s.destroy(); process.exit(0) })
