import { test, type Test } from 'tap'
import { Redis } from 'ioredis'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { listeningUrls, runBin, type BinProcess } from './helpers/cli-bin'
import { rawExchange, openTunnel, openTunnelOnceAdmitted, basic, retryAfterOf } from './helpers/raw-client'
import { startOrigin } from './helpers/servers'
import { startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { redisServerMissing, startRedisServer, type RedisServer } from './helpers/redis-server'

// Two bins sharing one Redis stand for two replicas behind a load balancer.

const AUTH = basic('alice', 'alice-password')
const WRONG = basic('alice', 'wrong')

interface Replica { readonly bin: BinProcess, readonly port: number }

async function startReplica (
  t: Test,
  redis: RedisServer,
  user: object,
  extra: { redis?: object, [key: string]: unknown } = {},
  env: Record<string, string> = {}
): Promise<Replica> {
  const { redis: redisExtra, ...rest } = extra
  const file = join(mkdtempSync(join(tmpdir(), 'ffp-replica-')), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { alice: { password: 'alice-password', ...user } },
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'info' },
    redis: { url: redis.url, ...redisExtra },
    ...rest
  }))
  const bin = runBin(t, ['--config', file], env)
  const [url] = await listeningUrls(bin)
  return { bin, port: Number(new URL(url ?? '').port) }
}

function get (replica: Replica, target: string, authorization = AUTH): Promise<{ status: number, text: string }> {
  return rawExchange(replica.port, `GET ${target} HTTP/1.1\r\nHost: ${new URL(target).host}\r\nProxy-Authorization: ${authorization}\r\nConnection: close\r\n\r\n`)
}

/** The JSON log lines of `bin` whose message includes `text`. */
function logLines (bin: BinProcess, text: string): string[] {
  return bin.stdout().split('\n').filter((line) => line.startsWith('{') && line.includes(text))
}

test('redis: two replicas count a user\'s requestsPerMinute together (30 requests spread over both: 10 answered, 20 refused with Retry-After)', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t)
  const origin = await startOrigin(t)
  const [a, b] = await Promise.all([startReplica(t, redis, { requestsPerMinute: 10 }), startReplica(t, redis, { requestsPerMinute: 10 })])
  const statuses: number[] = []
  let lastRefusal = ''
  for (let i = 0; i < 30; i++) {
    const answer = await get(i % 2 === 0 ? a : b, `http://127.0.0.1:${origin.port}/${i}`)
    statuses.push(answer.status)
    if (answer.status === 429) lastRefusal = answer.text
  }
  t.same(statuses.slice(0, 10), Array(10).fill(200), 'the first ten answered, five on each replica')
  t.same(statuses.slice(10), Array(20).fill(429), 'all twenty after them refused, on both replicas')
  t.match(lastRefusal, /\r\nretry-after: (60|[1-5]\d|[1-9])\r\n/i, 'Retry-After: the seconds until the window that began with the first request ends')
})

test('redis: two replicas share a user\'s maxConcurrentTunnels, and a closed tunnel gives its slot back to either', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t)
  const destination = await startTcpDestination(t)
  const [a, b] = await Promise.all([startReplica(t, redis, { maxConcurrentTunnels: 2 }), startReplica(t, redis, { maxConcurrentTunnels: 2 })])
  const target = `127.0.0.1:${destination.port}`
  const first = await openTunnel(a.port, target, { 'Proxy-Authorization': AUTH })
  const firstUpstream = await destination.nextConnection()
  const second = await openTunnel(b.port, target, { 'Proxy-Authorization': AUTH })
  t.equal(first.status, 200)
  t.equal(second.status, 200)
  const third = await openTunnel(a.port, target, { 'Proxy-Authorization': AUTH })
  t.equal(third.status, 429, 'a third on either replica is refused')
  t.match(third.head, /connection_limit_reached/)
  third.socket.destroy()
  const fourth = await openTunnel(b.port, target, { 'Proxy-Authorization': AUTH })
  t.equal(fourth.status, 429)
  fourth.socket.destroy()

  first.socket.destroy()
  firstUpstream.destroy()
  // The slot is given back when the tunnel's both sides have closed, on replica a.
  const reopened = await openTunnelOnceAdmitted(b.port, target, { 'Proxy-Authorization': AUTH })
  t.equal(reopened.status, 200, 'replica b opens one once replica a closed its tunnel')
  reopened.socket.destroy()
  second.socket.destroy()
})

test('redis: the authentication lockout is shared (failures on both replicas add up, then both refuse the client, each saying when the shared window ends)', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t)
  const origin = await startOrigin(t)
  const extra = { authFailureLimit: { maxFailures: 4, window: 60000 } }
  const [a, b] = await Promise.all([startReplica(t, redis, {}, extra), startReplica(t, redis, {}, extra)])
  const target = `http://127.0.0.1:${origin.port}/`
  for (let i = 0; i < 4; i++) t.equal((await get(i % 2 === 0 ? a : b, target, WRONG)).status, 407, 'two wrong guesses on each')
  for (const [name, replica] of [['a', a], ['b', b]] as const) {
    const locked = await get(replica, target)
    t.equal(locked.status, 429, `locked out on replica ${name}, right password or not`)
    const retryAfter = retryAfterOf(locked.text)
    t.ok(retryAfter !== null && retryAfter >= 1 && retryAfter <= 60, `replica ${name}'s Retry-After is inside the 60 s window (${retryAfter})`)
  }
})

test('redis: a replica killed with open tunnels gives its user\'s slots back once their lease expires, with no clean-up', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t)
  const destination = await startTcpDestination(t)
  const extra = { redis: { leaseTime: 1500 } }
  const [a, b] = await Promise.all([startReplica(t, redis, { maxConcurrentTunnels: 2 }, extra), startReplica(t, redis, { maxConcurrentTunnels: 2 }, extra)])
  const target = `127.0.0.1:${destination.port}`
  const tunnels = [await openTunnel(a.port, target, { 'Proxy-Authorization': AUTH }), await openTunnel(a.port, target, { 'Proxy-Authorization': AUTH })]
  t.same(tunnels.map((tunnel) => tunnel.status), [200, 200])
  // Held past the first leases' expiry, on Redis's clock: replica a renews them while it lives.
  const client = new Redis(redis.url)
  t.teardown(() => client.disconnect())
  const firstExpiry = Math.max(...(await client.zrange('forward-proxy:slots:alice', '0', '-1', 'WITHSCORES')).filter((_, index) => index % 2 === 1).map(Number))
  const redisNow = async (): Promise<number> => {
    const [seconds, micros] = await client.time()
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
  }
  await eventually(async () => await redisNow() > firstExpiry, 5000)
  const renewed = (await client.zrange('forward-proxy:slots:alice', '0', '-1', 'WITHSCORES')).filter((_, index) => index % 2 === 1).map(Number)
  t.ok(renewed.length === 2 && renewed.every((expiry) => expiry > firstExpiry), 'both leases were renewed past their first expiry')
  const whileAlive = await openTunnel(b.port, target, { 'Proxy-Authorization': AUTH })
  t.equal(whileAlive.status, 429, 'a live replica keeps its slots past the lease time')
  whileAlive.socket.destroy()

  a.bin.child.kill('SIGKILL')
  await a.bin.exited
  const killedAt = Date.now()
  const reopened = await openTunnelOnceAdmitted(b.port, target, { 'Proxy-Authorization': AUTH })
  t.equal(reopened.status, 200, 'replica b opens a tunnel once the dead replica\'s leases expired')
  t.ok(Date.now() - killedAt <= 1500 + 1000, 'within the lease time (and the polling interval)')
  reopened.socket.destroy()
  for (const tunnel of tunnels) tunnel.socket.destroy()
})

test('redis: when Redis goes away, onError "allow" keeps answering with limits counted per process, logs one line when lost and one when back, and counts the transitions', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t)
  const origin = await startOrigin(t)
  const replica = await startReplica(t, redis, { requestsPerMinute: 3 }, { metrics: { port: 0 } })
  const metricsUrl = /metrics: (http:\/\/\S+)/.exec(replica.bin.stdout())?.[1] ?? ''
  const target = `http://127.0.0.1:${origin.port}/`
  t.equal((await get(replica, target)).status, 200)
  await redis.kill()
  const whileDown = []
  for (let i = 0; i < 4; i++) whileDown.push((await get(replica, target)).status)
  t.same(whileDown, [200, 200, 200, 429], 'counted in the process: its 3 per minute hold there')
  await eventually(() => logLines(replica.bin, 'cannot be reached').length > 0, 2000)
  t.equal(logLines(replica.bin, 'cannot be reached').length, 1, 'one line when lost')
  t.notOk(replica.bin.stdout().includes('Error:') || replica.bin.stderr().includes('Unhandled'), 'no stack or unhandled rejection')

  await redis.restart()
  await eventually(() => logLines(replica.bin, 'is back; limits are shared again').length === 1, 5000)
  t.equal(logLines(replica.bin, 'cannot be reached').length, 1, 'still one line for the loss')
  // The restarted Redis is empty: the user's window starts again there.
  t.equal((await get(replica, target)).status, 200, 'counted in Redis again')
  const scrape = await fetch(metricsUrl)
  const text = await scrape.text()
  t.match(text, /forward_proxy_limit_store_transitions_total\{forward_proxy_limit_store_state="lost"\} 1\n/)
  t.match(text, /forward_proxy_limit_store_transitions_total\{forward_proxy_limit_store_state="back"\} 1\n/)
})

test('redis: onError "deny" answers 503 proxy_internal_error while Redis is away, within its timeout, and serves again once it is back', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t)
  const origin = await startOrigin(t)
  // 16 a minute: too few for the replica to take places ahead, so every request asks Redis.
  const replica = await startReplica(t, redis, { requestsPerMinute: 16 }, { redis: { onError: 'deny', timeout: 300 }, metrics: { port: 0 } })
  const metricsUrl = /metrics: (http:\/\/\S+)/.exec(replica.bin.stdout())?.[1] ?? ''
  const target = `http://127.0.0.1:${origin.port}/`
  t.equal((await get(replica, target)).status, 200)
  redis.pause()
  t.teardown(() => redis.resume())
  const started = Date.now()
  const refused = await get(replica, target)
  t.equal(refused.status, 503, 'a Redis that does not answer: refused')
  t.match(refused.text, /\r\nproxy-status: [^;\r\n]+; error=proxy_internal_error; details="limit store unavailable"\r\n/i)
  t.ok(Date.now() - started < 300 + 1000, 'not kept waiting past the timeout')
  await eventually(() => logLines(replica.bin, 'cannot be reached').length > 0, 2000)
  t.equal(logLines(replica.bin, 'cannot be reached').length, 1)
  t.match(logLines(replica.bin, 'cannot be reached')[0], /"reason":"[^"]*(timed out|no answer within 300 ms)/, 'the line says why')
  redis.resume()
  // While lost, one request a second probes Redis; the one that finds it answers is served.
  await eventually(async () => (await get(replica, target)).status === 200, 5000)
  await eventually(() => logLines(replica.bin, 'is back; limits are shared again').length > 0, 2000)
  t.equal(logLines(replica.bin, 'is back; limits are shared again').length, 1, 'one line when back')
  const metrics = await (await fetch(metricsUrl)).text()
  t.match(metrics, /\nforward_proxy_request_outcomes_total\{forward_proxy_kind="forward",forward_proxy_outcome="failed",forward_proxy_reason="limit_store_unavailable"\} [1-9]\d*\n/, 'counted as failed for that reason')
})

test('redis: the password comes from the environment, never from the URL in the configuration file', { skip: redisServerMissing }, async (t) => {
  const redis = await startRedisServer(t, { password: 'redis-password-1' })
  const origin = await startOrigin(t)
  const replica = await startReplica(t, redis, { requestsPerMinute: 1 }, { redis: { password: { env: 'TEST_REDIS_PASSWORD' } } }, { TEST_REDIS_PASSWORD: 'redis-password-1' })
  const target = `http://127.0.0.1:${origin.port}/`
  t.equal((await get(replica, target)).status, 200)
  t.equal((await get(replica, target)).status, 429, 'counted in the Redis it authenticated to')
  t.equal(logLines(replica.bin, 'cannot be reached').length, 0)
  t.notOk(replica.bin.stdout().includes('redis-password-1'), 'the password is never logged')

  const file = join(t.testdir(), 'with-password.json')
  const withPassword = new URL(redis.url)
  withPassword.password = 'redis-password-1'
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], users: { alice: 'alice-password' }, redis: { url: withPassword.href } }))
  const refused = runBin(t, ['--config', file])
  t.equal(await refused.exited, 1)
  t.match(refused.stderr(), /\/redis\/url: holds a password/)
  t.notOk(refused.stderr().includes('redis-password-1'), 'the message never repeats it')
})
