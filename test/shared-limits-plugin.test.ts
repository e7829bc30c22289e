import { test } from 'tap'
import { Redis } from 'ioredis'
import { rawExchange, basic } from './helpers/raw-client'
import { startOrigin, startProxy, registrationError } from './helpers/servers'
import { redisServerMissing, startRedisServer } from './helpers/redis-server'
import type { ForwardProxyOptions } from '../lib/index'

function get (port: number, target: string, authorization: string): Promise<number> {
  return rawExchange(port, `GET ${target} HTTP/1.1\r\nHost: ${new URL(target).host}\r\nProxy-Authorization: ${authorization}\r\nConnection: close\r\n\r\n`).then((answer) => answer.status)
}

test('redis option: a reconfigure keeps the counts in Redis; a lowered requestsPerMinute holds from the user\'s next request, and a removed user is refused on its next one', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t)
  const origin = await startOrigin(t)
  const options = (requestsPerMinute: number, users = true): ForwardProxyOptions => ({
    auth: { users: users ? { alice: { password: 'alice-pw', requestsPerMinute }, bob: 'bob-pw' } : { bob: 'bob-pw' } },
    redis: { url: redis.url }
  })
  const proxy = await startProxy(t, options(10))
  const target = `http://127.0.0.1:${origin.port}/`
  for (let i = 0; i < 4; i++) t.equal(await get(proxy.port, target, basic('alice', 'alice-pw')), 200)
  proxy.app.forwardProxy.reconfigure({ destinations: { allowPrivateNetworks: true, allowedPorts: '*' }, ...options(5) })
  t.equal(await get(proxy.port, target, basic('alice', 'alice-pw')), 200, 'the fifth of the window, counted with the four before the reconfigure')
  t.equal(await get(proxy.port, target, basic('alice', 'alice-pw')), 429, 'the sixth is over the lowered limit')
  proxy.app.forwardProxy.reconfigure({ destinations: { allowPrivateNetworks: true, allowedPorts: '*' }, ...options(5, false) })
  t.equal(await get(proxy.port, target, basic('alice', 'alice-pw')), 407, 'a removed user is refused')
  t.equal(await get(proxy.port, target, basic('bob', 'bob-pw')), 200, 'others go on')
})

test('redis option: a change of it is refused by reconfigure (fixed at registration), and bad values fail registration naming the field', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 'alice-pw' } }, redis: { url: redis.url } })
  t.throws(() => proxy.app.forwardProxy.reconfigure({ auth: { users: { alice: 'alice-pw' } }, redis: { url: redis.url, keyPrefix: 'other:' } }), { code: 'FFP_ERR_INVALID_OPTION', option: 'redis.keyPrefix' })
  t.throws(() => proxy.app.forwardProxy.reconfigure({ auth: { users: { alice: 'alice-pw' } } }), { code: 'FFP_ERR_INVALID_OPTION', option: 'redis' })
  for (const [redisOption, field] of [
    [{ url: 'http://127.0.0.1:6379' }, 'redis.url'],
    [{}, 'redis'],
    [{ url: redis.url, onError: 'maybe' }, 'redis.onError'],
    [{ url: redis.url, timeout: 0 }, 'redis.timeout'],
    [{ url: redis.url, keyPrefix: '' }, 'redis.keyPrefix'],
    [{ url: redis.url, ca: 'PEM' }, 'redis.ca'],
    [{ url: redis.url, database: 1 }, 'redis.database']
  ] as const) {
    const error = await registrationError({ redis: redisOption })
    t.match(error, { code: 'FFP_ERR_INVALID_OPTION', option: field }, `${JSON.stringify(redisOption)}: ${field}`)
  }
  const withPassword = await registrationError({ redis: { url: 'redis://:hunter2-password@127.0.0.1:1/0/x' } })
  t.notMatch(String((withPassword as Error).message), /hunter2/, 'a URL\'s password is never repeated')
})

test('redis option: an application\'s own ioredis client is used and never closed by the proxy', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t)
  const origin = await startOrigin(t)
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const proxy = await startProxy(t, { auth: { users: { alice: { password: 'alice-pw', requestsPerMinute: 1 } } }, redis: { client, keyPrefix: 'app-proxy:' } })
  const target = `http://127.0.0.1:${origin.port}/`
  t.equal(await get(proxy.port, target, basic('alice', 'alice-pw')), 200)
  t.equal(await get(proxy.port, target, basic('alice', 'alice-pw')), 429)
  t.ok(await client.exists('app-proxy:rate:alice'), 'counted under the prefix, in the application\'s Redis')
  await proxy.app.close()
  t.equal(client.status, 'ready', 'the application\'s client is still open')
})
