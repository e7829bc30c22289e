import { test } from 'tap'
import { spawn } from 'node:child_process'
import { connect } from 'node:net'
import { startProxy } from './helpers/servers'
import { openTunnel } from './helpers/raw-client'

test('connection_timeout: a destination that never accepts gets 504 within connectTimeout', async (t) => {
  // A listener with a full accept queue that never accepts: Linux drops further SYNs.
  const python = spawn('python3', ['-c', [
    'import socket, sys, time',
    's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)',
    'print(s.getsockname()[1], flush=True)',
    'sys.stdin.read()'
  ].join('\n')], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => python.kill())
  const port = await new Promise<number>((resolve) => python.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))))
  const fillers = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1'), connect(port, '127.0.0.1')]
  for (const filler of fillers) filler.on('error', () => {})
  t.teardown(() => { for (const filler of fillers) filler.destroy() })
  const proxy = await startProxy(t, { limits: { connectTimeout: 300 } })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${port}`)
  t.equal(tunnel.status, 504)
  t.match(tunnel.head, /error=connection_timeout/)
  tunnel.socket.destroy()
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})
