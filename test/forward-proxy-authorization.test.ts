import { test, type Test } from 'tap'
import { createServer, type AddressInfo } from 'node:net'
import { startProxy } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'

/** A raw TCP origin that records each request head byte for byte and answers 204. */
async function startRawOrigin (t: Test): Promise<{ port: number, heads: string[] }> {
  const heads: string[] = []
  const server = createServer((socket) => {
    let buffered = ''
    socket.on('error', () => {})
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1')
      const end = buffered.indexOf('\r\n\r\n')
      if (end === -1) return
      heads.push(buffered.slice(0, end))
      buffered = buffered.slice(end + 4)
      socket.write('HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n')
      socket.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { port: (server.address() as AddressInfo).port, heads }
}

test('valid Proxy-Authorization is consumed by the proxy and never reaches the origin', async (t) => {
  const origin = await startRawOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const credentials = basic('alice', 's3cret')
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${credentials}\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 204, 'authenticated and forwarded')
  t.equal(origin.heads.length, 1)
  const head = origin.heads[0] ?? ''
  t.notMatch(head.toLowerCase(), /proxy-authorization/)
  t.notOk(head.includes('s3cret'), 'password not in the head')
  t.notOk(head.includes(credentials.slice('Basic '.length)), 'encoded credentials not in the head')
})

test('Proxy-Authorization is stripped even when the proxy does not require authentication', async (t) => {
  const origin = await startRawOrigin(t)
  const proxy = await startProxy(t)
  const credentials = basic('bob', 'hunter2')
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${credentials}\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 204)
  t.notMatch((origin.heads[0] ?? '').toLowerCase(), /proxy-authorization|hunter2/)
  t.notOk((origin.heads[0] ?? '').includes(credentials.slice('Basic '.length)))
})
