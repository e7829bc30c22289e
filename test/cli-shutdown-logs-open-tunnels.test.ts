// Nothing lost at shutdown: a tunnel still open when the bin gets SIGTERM is closed by the
// shutdown and still gets its access line before the process exits.
import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { openTunnel } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'

test('bin: SIGTERM with an open tunnel writes the tunnel\'s access line before exiting 0', async (t) => {
  const destination = await startTcpDestination(t)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], destinations: LOOPBACK_ORIGINS, log: { level: 'info' } }))
  const bin = runBin(t, ['--config', file])
  const port = portOf((await listeningUrls(bin))[0])
  const tunnel = await openTunnel(port, `127.0.0.1:${destination.port}`)
  t.teardown(() => { tunnel.socket.destroy() })
  t.equal(tunnel.status, 200)
  const upstream = await destination.nextConnection()
  upstream.resume()
  tunnel.socket.write('ping')

  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  const line = bin.stdout().split('\n').find((entry) => entry.includes('"access"') && entry.includes('"kind":"tunnel"'))
  t.ok(line, 'the tunnel closed by the shutdown has its access line')
  t.match(JSON.parse(line ?? '{}'), { access: { kind: 'tunnel', tunnel: 'opaque', destination: `127.0.0.1:${destination.port}`, bytesIn: 4 } })
})
