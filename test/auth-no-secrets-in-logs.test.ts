import { test } from 'tap'
import { Writable } from 'node:stream'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'

test('no password, Basic token or Proxy-Authorization value appears in the logs, even at trace level', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk: Buffer, _encoding, callback) { lines.push(chunk.toString()); callback() } })
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 'pa55-very-secret' } } }, undefined, { logger: { level: 'trace', stream } })
  const good = basic('alice', 'pa55-very-secret')
  const bad = basic('alice', 'wrong-but-secret-too')
  for (const auth of [good, bad]) {
    await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${auth}\r\nConnection: close\r\n\r\n`)
    const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`, { 'Proxy-Authorization': auth })
    tunnel.socket.destroy()
  }
  await proxy.app.close()
  const log = lines.join('')
  t.ok(lines.length > 4, 'the proxy did log the requests')
  for (const secret of ['pa55-very-secret', 'wrong-but-secret-too', good.slice(6), bad.slice(6)]) {
    t.notOk(log.includes(secret), `the logs never contain ${secret.slice(0, 4)}...`)
  }
})
