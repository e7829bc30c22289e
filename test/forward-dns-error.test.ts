import { test } from 'tap'
import { startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

test('a name that does not resolve gets 502 with Proxy-Status error=dns_error', async (t) => {
  const asked: string[] = []
  const proxy = await startProxy(t, {
    // Fake DNS: nothing leaves the machine.
    resolver: async (hostname) => {
      asked.push(hostname)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname })
    }
  })
  const res = await rawExchange(proxy.port, 'GET http://no-such-host.example/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  t.equal(res.status, 502)
  t.match(res.text, /\r\nproxy-status: fastify-forward-proxy; error=dns_error/i)
  t.same(asked, ['no-such-host.example'])
  t.notMatch(res.text, /ENOTFOUND|getaddrinfo|\bat .+:\d+:\d+|Error:/, 'no internals or stack trace in the response')
})
