// Opens idle CONNECT tunnels through the proxy in two steps, so the harness can read the proxy's
// memory between them: `first` tunnels, one JSON line, then (after a line on stdin) the rest up
// to `count`, a second JSON line; all stay open and idle until stdin ends. The difference between
// the two readings is the cost of the later tunnels alone, without the proxy's warm-up (code,
// pools, the first leaf). Opaque: the tunnel only. Intercepted (`ca` given): TLS inside the
// tunnel and one keep-alive GET /small, so the proxy holds both TLS sides and its destination
// connection. Argument: JSON { proxyPort, host, port, first, count, ca? }. Each line:
// { opened, errors, firstError, seconds }.
import { readFileSync } from 'node:fs'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { getHead, openTunnel, runPool, startTls } from './connect-tunnel.mjs'

const { proxyPort, host, port, first, count, ca: caPath } = JSON.parse(process.argv[2])
const ca = caPath === undefined ? undefined : readFileSync(caPath)
const held = []

async function open () {
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
}

async function step (n) {
  const started = performance.now()
  const failures = await runPool(n, 64, open)
  const seconds = (performance.now() - started) / 1000
  process.stdout.write(JSON.stringify({ opened: held.length, errors: failures.length, firstError: failures[0]?.message, seconds }) + '\n')
}

const input = createInterface({ input: process.stdin })
input.once('close', () => { for (const s of held) s.destroy(); process.exit(0) })
await step(first)
await once(input, 'line')
await step(count - first)
