import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

const TARGETS = [
  '/a/./b/../c',
  '/a%2Fb/%2e%2e/%2E%2E/c',
  '//double//slashes///',
  '/p?q=1&q=2&&=&x=%zz&y=a+b;c=d?e=/f',
  '/%7Euser/..%2f..%2fetc?',
  '/?'
]

test('path and query reach the destination exactly as received', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  for (const path of TARGETS) {
    const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
    t.equal(res.status, 200, `${path} forwarded`)
    t.equal(origin.requests.at(-1)?.url, path, `${path} unchanged`)
  }
  t.equal(origin.requests.length, TARGETS.length)
})

test('a target without a path is sent as / (query kept)', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  for (const [suffix, expected] of [['', '/'], ['?x=%2F', '/?x=%2F']]) {
    const res = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}${suffix} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(res.status, 200)
    t.equal(origin.requests.at(-1)?.url, expected)
  }
})
