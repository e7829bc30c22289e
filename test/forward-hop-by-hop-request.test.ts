import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

const HOP_BY_HOP = ['keep-alive', 'te', 'trailer', 'upgrade', 'proxy-connection', 'proxy-authorization']

test('hop-by-hop request headers and every name listed in Connection are removed', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const head = [
    `GET http://127.0.0.1:${origin.port}/hop HTTP/1.1`,
    'Host: ignored.example',
    'Connection: close, X-Secret, x-other',
    'Connection: X-Third',
    'Keep-Alive: timeout=5',
    'TE: trailers',
    'Trailer: X-Checksum',
    'Upgrade: example/1',
    'Proxy-Connection: keep-alive',
    'Proxy-Authorization: Basic dXNlcjpwYXNz',
    'X-SECRET: s1',
    'X-Other: s2',
    'x-third: s3',
    'X-Kept: kept'
  ]
  const res = await rawExchange(proxy.port, `${head.join('\r\n')}\r\n\r\n`)
  t.equal(res.status, 200)
  const seen = origin.requests[0]
  const names = (seen?.rawHeaders ?? []).filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase())
  for (const name of [...HOP_BY_HOP, 'x-secret', 'x-other', 'x-third']) t.notOk(names.includes(name), `${name} not forwarded`)
  // undici manages its own connection to the origin; none of the client's tokens survive.
  t.equal(seen?.headers.connection, 'keep-alive', 'Connection is the proxy\'s own')
  t.equal(seen?.headers['x-kept'], 'kept', 'end-to-end headers are kept')
  t.notMatch(JSON.stringify(seen?.rawHeaders), /s1|s2|s3|dXNlcjpwYXNz/)
})
