import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

function head (method: string, port: number, maxForwards: string): string {
  return `${method} http://127.0.0.1:${port}/mf HTTP/1.1\r\nHost: x\r\nMax-Forwards: ${maxForwards}\r\nConnection: close\r\n\r\n`
}

test('TRACE and OPTIONS with a valid Max-Forwards are forwarded with it decremented', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  for (const method of ['TRACE', 'OPTIONS']) {
    const res = await rawExchange(proxy.port, head(method, origin.port, '5'))
    t.equal(res.status, 200, `${method} forwarded`)
    t.equal(origin.requests.at(-1)?.method, method)
    t.equal(origin.requests.at(-1)?.headers['max-forwards'], '4', `${method}: 5 becomes 4`)
  }
  await rawExchange(proxy.port, head('OPTIONS', origin.port, '1'))
  t.equal(origin.requests.at(-1)?.headers['max-forwards'], '0', '1 becomes 0 and is still forwarded')
})

test('an invalid Max-Forwards is forwarded unchanged, not rejected', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  for (const value of ['abc', '-1', '1.5', '0x1']) {
    for (const method of ['TRACE', 'OPTIONS']) {
      const res = await rawExchange(proxy.port, head(method, origin.port, value))
      t.equal(res.status, 200, `${method} with ${value} forwarded`)
      t.equal(origin.requests.at(-1)?.headers['max-forwards'], value)
    }
  }
})

test('other methods are unaffected by Max-Forwards, even at 0', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  for (const value of ['0', '5']) {
    const res = await rawExchange(proxy.port, head('GET', origin.port, value))
    t.equal(res.status, 200)
    t.equal(origin.requests.at(-1)?.headers['max-forwards'], value, `GET keeps Max-Forwards ${value}`)
  }
})
