import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import type { ForwardProxyOutgoingRequest } from '../lib/index'

test('transformRequest sees the built request: hop-by-hop, Connection-listed and Proxy-Authorization removed, Host from the target, decremented Max-Forwards and Via added, lower-case names, repeats as arrays, raw path', async (t) => {
  const origin = await startOrigin(t)
  const seen: ForwardProxyOutgoingRequest[] = []
  const proxy = await startProxy(t, {
    transforms: [{ transformRequest (_request, _destination, outgoing) { seen.push(structuredClone(outgoing)) } }]
  })
  const head = [
    `OPTIONS http://127.0.0.1:${origin.port}/a/./b?x=%41 HTTP/1.1`,
    'Host: wrong.example',
    'Connection: close, X-Listed',
    'Keep-Alive: timeout=5',
    'X-Listed: gone',
    'Proxy-Authorization: Basic c2VjcmV0',
    'TE: trailers',
    'Max-Forwards: 5',
    'X-Repeat: one',
    'X-Repeat: two',
    'X-Mixed-Case: Value'
  ]
  const res = await rawExchange(proxy.port, `${head.join('\r\n')}\r\n\r\n`)
  t.equal(res.status, 200)
  const outgoing = seen[0]
  t.equal(outgoing?.method, 'OPTIONS')
  t.equal(outgoing?.path, '/a/./b?x=%41')
  t.same(outgoing?.headers, {
    host: `127.0.0.1:${origin.port}`,
    'x-repeat': ['one', 'two'],
    'x-mixed-case': 'Value',
    'max-forwards': '4',
    via: '1.1 fastify-forward-proxy'
  })
})
