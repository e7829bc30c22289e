import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy, startSentinel } from './helpers/servers'
import { eventually } from './helpers/eventually'

test('an IPv6 literal target [::1]:port opens a tunnel when allowed', async (t) => {
  const sentinel = await startSentinel(t, '::1')
  const proxy = await startProxy(t)
  const res = connect(proxy.port, '127.0.0.1')
  res.on('error', () => {})
  t.teardown(() => res.destroy())
  res.write(`CONNECT [::1]:${sentinel.port} HTTP/1.1\r\nHost: x\r\n\r\n`)
  const head = await new Promise<string>((resolve) => res.once('data', (chunk: Buffer) => resolve(chunk.toString())))
  t.match(head, /^HTTP\/1\.1 200 /)
  await eventually(() => sentinel.connections.length === 1)
  t.equal(sentinel.connections.length, 1)
})
