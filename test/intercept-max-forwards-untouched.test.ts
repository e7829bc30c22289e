import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'

test('Max-Forwards inside an intercepted tunnel is forwarded untouched; OPTIONS and TRACE at 0 reach the origin, never answered by the proxy', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const target = `127.0.0.1:${origin.port}`
  const cases = [
    { method: 'OPTIONS', maxForwards: '0' },
    { method: 'TRACE', maxForwards: '0' },
    { method: 'OPTIONS', maxForwards: '5' },
    { method: 'TRACE', maxForwards: '3' }
  ]
  for (const [index, { method, maxForwards }] of cases.entries()) {
    const tls = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert, servername: 'localhost' })
    const response = await rawTlsExchange(tls, `${method} /case-${index} HTTP/1.1\r\nHost: ${target}\r\nMax-Forwards: ${maxForwards}\r\nConnection: close\r\n\r\n`)
    t.equal(response.status, 200, `${method} with Max-Forwards ${maxForwards} is answered by the origin`)
    const seen = origin.requests.find((request) => request.url === `/case-${index}`)
    t.equal(seen?.method, method)
    t.equal(seen?.headers['max-forwards'], maxForwards, 'the origin saw the value as sent, not decremented')
  }
})
