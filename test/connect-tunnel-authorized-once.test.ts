import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { basic, openTunnel } from './helpers/raw-client'
import { readAll, startTcpDestination } from './helpers/tcp-destination'

test('a tunnel is authorized once, at opening; HTTP-looking bytes inside it are relayed verbatim, never parsed or re-authorized', async (t) => {
  const destination = await startTcpDestination(t)
  const checks: string[] = []
  const proxy = await startProxy(t, {
    auth: { validate: (user, password) => { checks.push(user); return user === 'alice' && password === 's3cret' } }
  })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': basic('alice', 's3cret') })
  t.equal(tunnel.status, 200)
  t.same(checks, ['alice'], 'credentials checked when the tunnel opened')
  const upstream = await destination.nextConnection()
  const chunks: Buffer[] = []
  upstream.on('data', (chunk: Buffer) => chunks.push(chunk))
  const upstreamEnded = new Promise<void>((resolve) => upstream.once('end', () => resolve()))

  const inside = [
    'GET http://elsewhere.example/inside HTTP/1.1\r\nHost: elsewhere.example\r\nProxy-Authorization: ' + basic('mallory', 'x') + '\r\n\r\n',
    `CONNECT 127.0.0.1:${proxy.port} HTTP/1.1\r\nHost: x\r\n\r\n`,
    'NOT HTTP AT ALL \x00\xff\r\n\r\n'
  ].join('')
  const sent = Buffer.from(inside, 'latin1')
  tunnel.socket.end(sent)
  await upstreamEnded
  t.ok(Buffer.concat(chunks).equals(sent), 'the destination got every byte as sent')
  t.same(checks, ['alice'], 'nothing inside the tunnel was checked again (mallory never seen)')
  upstream.end('reply')
  t.equal(await readAll(tunnel.socket), 'reply', 'no proxy response was injected into the tunnel')
})
