// rediss:// for the shared limits, against a redis-server that serves TLS only: the plugin's
// `redis` option counts over TLS with the `ca` it is given, and a server Node cannot verify (a CA
// it does not trust, a certificate for another name) is an unreachable store: 503 with onError
// "deny", counted per process with "allow", never used silently.

import { test, type Test } from 'tap'
import { Redis } from 'ioredis'
import { createRedisLimitStore } from './helpers/internals'
import type { ForwardProxyOptions } from '../lib/index'
import { rawExchange, basic, type RawExchange } from './helpers/raw-client'
import { startOrigin, startProxy } from './helpers/servers'
import { redisTlsMissing, startRedisServer, type RedisServer } from './helpers/redis-server'
import { certificateDirectory, issueLeaf, makeCa, type PemPair } from './helpers/destination-certificates'

const skip = redisTlsMissing()
const PASSWORD = 'alice-pw'
const AUTHORIZATION = basic('alice', PASSWORD)
const RATE_KEY = 'forward-proxy:rate:alice'
const UNAVAILABLE_STATUS = /\r\nproxy-status: [^;\r\n]+; error=proxy_internal_error; details="limit store unavailable"\r\n/i

const unhandled: unknown[] = []
process.on('unhandledRejection', (reason) => { unhandled.push(reason) })

/** A test CA and a leaf it issued with `san`, made with openssl in a directory removed at teardown. */
async function caAndLeaf (t: Test, san: string): Promise<{ ca: PemPair, leaf: PemPair }> {
  const directory = certificateDirectory(t)
  const ca = await makeCa(directory, 'redis-test-ca')
  return { ca, leaf: await issueLeaf(directory, 'redis-leaf', ca, { san }) }
}

/** A redis-server on 127.0.0.1 serving TLS only, with `leaf`. */
function startTlsRedis (t: Test, leaf: PemPair): Promise<RedisServer> {
  return startRedisServer(t, { tls: { cert: leaf.certPath, key: leaf.keyPath } })
}

/** A client of the test's own that trusts `ca`, to look into the server over TLS. */
function adminOf (t: Test, redis: RedisServer, ca: string): Redis {
  const admin = new Redis(redis.url, { tls: { ca }, maxRetriesPerRequest: 1 })
  admin.on('error', () => {})
  t.teardown(() => admin.disconnect())
  return admin
}

/** A proxy whose user alice may send `requestsPerMinute` requests, counted in `redis`. */
async function proxyFor (t: Test, redis: ForwardProxyOptions['redis'], requestsPerMinute = 2): Promise<number> {
  const proxy = await startProxy(t, { auth: { users: { alice: { password: PASSWORD, requestsPerMinute } } }, redis })
  return proxy.port
}

/** `count` GET requests of alice through the proxy, one after the other. */
async function getsThrough (proxyPort: number, target: string, count: number): Promise<RawExchange[]> {
  const answers: RawExchange[] = []
  for (let i = 0; i < count; i++) {
    answers.push(await rawExchange(proxyPort, `GET ${target} HTTP/1.1\r\nHost: ${new URL(target).host}\r\nProxy-Authorization: ${AUTHORIZATION}\r\nConnection: close\r\n\r\n`))
  }
  return answers
}

/**
 * Why the Redis limit store refuses `redis` (settings as the plugin passes them): the message of
 * its first call's rejection, which carries the connection's error.
 */
async function storeRefusal (t: Test, redis: RedisServer, ca?: string): Promise<unknown> {
  const store = createRedisLimitStore({ url: redis.url, ...(ca === undefined ? {} : { ca }), keyPrefix: 'probe:', timeout: 5000, leaseTime: 30_000 })
  t.teardown(() => store.close())
  return await Promise.resolve(store.countRequest('alice', 1, 60_000)).then((msLeft: number) => `counted (${msLeft})`, (error: unknown) => error)
}

test('rediss:// with the ca of the server\'s CA: the plugin counts a user\'s requestsPerMinute in the TLS-only Redis (200, 200, 429; the counter is there)', { skip }, async (t) => {
  const { ca, leaf } = await caAndLeaf(t, 'IP:127.0.0.1')
  const redis = await startTlsRedis(t, leaf)
  t.match(redis.url, /^rediss:\/\/127\.0\.0\.1:\d+\/0$/)
  const origin = await startOrigin(t)
  // "deny": a store that could not connect answers 503, so the 200s cannot come from counting in the process.
  const proxyPort = await proxyFor(t, { url: redis.url, ca: ca.cert, onError: 'deny' })
  const answers = await getsThrough(proxyPort, `http://127.0.0.1:${origin.port}/`, 3)
  t.same(answers.map((answer) => answer.status), [200, 200, 429])
  t.equal(origin.requests.length, 2, 'the refused one never reached the origin')
  const admin = adminOf(t, redis, ca.cert)
  t.equal(await admin.hget(RATE_KEY, 'n'), '2', 'the two admitted requests were counted in Redis, reached over TLS only')
  t.ok(await admin.pttl(RATE_KEY) > 0, 'in a window that expires')
  t.same(unhandled, [])
})

test('rediss:// without ca (a CA Node does not trust) and onError "deny": the store cannot connect, alice gets 503 limit store unavailable, never 200, with no unhandled rejection', { skip }, async (t) => {
  const { ca, leaf } = await caAndLeaf(t, 'IP:127.0.0.1')
  const redis = await startTlsRedis(t, leaf)
  const origin = await startOrigin(t)
  t.equal(await adminOf(t, redis, ca.cert).ping(), 'PONG', 'the server answers a client that trusts its CA')
  t.match(await storeRefusal(t, redis), { code: 'FFP_ERR_LIMIT_STORE_UNAVAILABLE', message: /could not connect: unable to verify the first certificate/ }, 'the store refuses the certificate of an unknown issuer')

  const proxyPort = await proxyFor(t, { url: redis.url, onError: 'deny' })
  const answers = await getsThrough(proxyPort, `http://127.0.0.1:${origin.port}/`, 3)
  t.same(answers.map((answer) => answer.status), [503, 503, 503], 'the first (while connecting) and the ones after it')
  for (const answer of answers) t.match(answer.text, UNAVAILABLE_STATUS)
  t.equal(origin.requests.length, 0, 'nothing was forwarded')
  t.equal(await adminOf(t, redis, ca.cert).exists(RATE_KEY), 0, 'nothing was counted in Redis')
  t.same(unhandled, [], 'no unhandled rejection')
})

test('rediss:// without ca and the default onError "allow": alice is served, her requests counted in the process only (200, 200, 429; nothing in Redis)', { skip }, async (t) => {
  const { ca, leaf } = await caAndLeaf(t, 'IP:127.0.0.1')
  const redis = await startTlsRedis(t, leaf)
  const origin = await startOrigin(t)
  t.match(await storeRefusal(t, redis), { code: 'FFP_ERR_LIMIT_STORE_UNAVAILABLE', message: /could not connect: unable to verify the first certificate/ }, 'the store refuses the certificate of an unknown issuer')
  const proxyPort = await proxyFor(t, { url: redis.url })
  const answers = await getsThrough(proxyPort, `http://127.0.0.1:${origin.port}/`, 3)
  t.same(answers.map((answer) => answer.status), [200, 200, 429], 'the limit holds in the process')
  t.equal(await adminOf(t, redis, ca.cert).exists(RATE_KEY), 0, 'nothing was counted in Redis')
  t.same(unhandled, [], 'no unhandled rejection')
})

for (const [what, san] of [['for localhost only', 'DNS:localhost'], ['for IP 127.0.0.2', 'IP:127.0.0.2']] as const) {
  test(`rediss://127.0.0.1 with the ca, to a certificate from that CA ${what}: refused for the name, so alice gets 503 with onError "deny", never 200`, { skip }, async (t) => {
    const { ca, leaf } = await caAndLeaf(t, san)
    const redis = await startTlsRedis(t, leaf)
    const origin = await startOrigin(t)
    t.match(await storeRefusal(t, redis, ca.cert), { code: 'FFP_ERR_LIMIT_STORE_UNAVAILABLE', message: /could not connect: Hostname\/IP does not match certificate's altnames: IP: 127\.0\.0\.1 is not in the cert's list/ }, 'the store refuses the name, not the issuer')

    const proxyPort = await proxyFor(t, { url: redis.url, ca: ca.cert, onError: 'deny' })
    const answers = await getsThrough(proxyPort, `http://127.0.0.1:${origin.port}/`, 3)
    t.same(answers.map((answer) => answer.status), [503, 503, 503])
    for (const answer of answers) t.match(answer.text, UNAVAILABLE_STATUS)
    t.equal(origin.requests.length, 0, 'nothing was forwarded')
    t.same(unhandled, [], 'no unhandled rejection')
  })
}
