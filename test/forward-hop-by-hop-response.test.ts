import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

test('hop-by-hop response headers and names listed in the origin\'s Connection are removed', async (t) => {
  const origin = await startOrigin(t, (_req, res) => {
    res.setHeader('Connection', 'X-Internal, keep-alive')
    res.setHeader('X-Internal', '1')
    res.setHeader('Keep-Alive', 'timeout=5')
    res.setHeader('Proxy-Connection', 'keep-alive')
    res.setHeader('Upgrade', 'example/1')
    res.setHeader('X-Public', 'yes')
    res.end('body')
  })
  const proxy = await startProxy(t)
  const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(res.status, 200)
  const head = res.text.slice(0, res.text.indexOf('\r\n\r\n')).toLowerCase()
  t.notMatch(head, /x-internal/, 'Connection-listed response header removed (and not re-listed)')
  t.notMatch(head, /keep-alive: timeout|proxy-connection|upgrade:/)
  t.match(head, /\r\nx-public: yes/)
  t.match(head, /\r\nconnection: close/, 'the proxy manages its own connection to the client')
  t.ok(res.text.endsWith('body'))
})
