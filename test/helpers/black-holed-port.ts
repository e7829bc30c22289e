import { spawn } from 'node:child_process'
import { connect } from 'node:net'
import type { Test } from 'tap'

/**
 * A loopback port whose listener never accepts and whose accept queue is already full, so Linux
 * drops every further SYN: a dial to it hangs until the dialer gives up. The listener is a
 * Python process (Node cannot listen with a backlog of 0); it and the connections that fill the
 * queue are closed at teardown.
 */
export async function blackHoledPort (t: Test): Promise<number> {
  const python = spawn('python3', ['-c', [
    'import socket, sys',
    's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)',
    'print(s.getsockname()[1], flush=True)',
    'sys.stdin.read()'
  ].join('\n')], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => python.kill())
  const port = await new Promise<number>((resolve) => python.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))))
  const fillers = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1'), connect(port, '127.0.0.1')]
  for (const filler of fillers) filler.on('error', () => {})
  t.teardown(() => { for (const filler of fillers) filler.destroy() })
  return port
}
