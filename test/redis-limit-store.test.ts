import { test, type Test } from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { createRedisLimitStore, type AuthFailureCount, type LimitStore, type RedisLimitStoreSettings } from './helpers/internals'
import { redisServerMissing, startRedisServer, type RedisServer } from './helpers/redis-server'
import { eventually } from './helpers/eventually'
import { within } from './helpers/within'

/*
 * The Redis limit store against a real redis-server on loopback: shared counts between two
 * stores (two replicas), the batching of request counts, slot leases that outlive neither
 * their process nor its renewals, published authentication failures, and a Redis that dies,
 * hangs or comes back.
 */

const TIMEOUT = 200
const UNAVAILABLE = { code: 'FFP_ERR_LIMIT_STORE_UNAVAILABLE' }
const skip = redisServerMissing

const unhandled: unknown[] = []
process.on('unhandledRejection', (reason) => { unhandled.push(reason) })

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** A store on `server` (its url unless the settings say otherwise), closed at teardown. */
function openStore (t: Test, server: RedisServer, settings: Partial<RedisLimitStoreSettings> = {}): LimitStore {
  const store = createRedisLimitStore({ url: server.url, keyPrefix: 'test:', timeout: TIMEOUT, leaseTime: 30_000, ...settings })
  t.teardown(() => store.close())
  return store
}

/** A plain client to look into the server with. */
function adminOf (t: Test, server: RedisServer, password?: string): Redis {
  const admin = new Redis(server.url, { password, maxRetriesPerRequest: 1 })
  admin.on('error', () => {})
  t.teardown(() => admin.disconnect())
  return admin
}

/** How many times Redis ran a script (EVAL and EVALSHA), from INFO commandstats. */
async function scriptCalls (admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats')
  let calls = 0
  for (const match of stats.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)) calls += Number(match[1])
  return calls
}

/** Calls `call`, expects it to reject as unavailable within the store's timeout. */
async function rejectsInTime (t: Test, call: () => unknown, what: string): Promise<void> {
  const started = Date.now()
  const outcome = await within(Promise.resolve().then(call).then(() => 'resolved', (error: unknown) => error), what, 2000)
  const elapsed = Date.now() - started
  t.match(outcome, UNAVAILABLE, `${what} rejects as unavailable`)
  t.ok(elapsed <= TIMEOUT + 150, `${what} settles within the timeout (${elapsed} ms)`)
}

/** Calls `acquire` every 20 ms until it takes a slot; the time it took. */
async function acquiredAfter (acquire: () => Promise<(() => void) | null>, deadlineMs: number): Promise<number> {
  const started = Date.now()
  while ((await acquire()) === null) {
    if (Date.now() - started > deadlineMs) throw new Error(`no slot within ${deadlineMs} ms`)
    await sleep(20)
  }
  return Date.now() - started
}

test('request rate: the window starts at the first request, and a refused request is told when it ends', { skip }, async (t) => {
  const store = openStore(t, await startRedisServer(t))
  // Begin half-way through a clock second: a window aligned to the clock would end 500 ms early.
  await sleep(1500 - Date.now() % 1000)
  const first = Date.now()
  t.equal(await store.countRequest('alice', 3, 1000), 0, 'the first request opens the window')
  t.same(await Promise.all([store.countRequest('alice', 3, 1000), store.countRequest('alice', 3, 1000)]), [0, 0], 'within the limit')
  const refused = await store.countRequest('alice', 3, 1000)
  t.ok(refused >= 1000 - (Date.now() - first) - 5 && refused <= 1000, `the fourth is refused until the window ends (${refused} ms)`)

  // Past the next clock second, ~600 ms into the window: still the same window.
  await sleep(1100 - Date.now() % 1000)
  const later = await store.countRequest('alice', 3, 1000)
  const sinceFirst = Date.now() - first
  t.ok(later >= 1000 - sinceFirst - 5 && later <= 1000 - sinceFirst + 100, `still refused after the clock second turned, ${later} ms left at ${sinceFirst} ms`)
  t.equal(await store.countRequest('bob', 3, 1000), 0, 'another key has its own window')

  await eventually(async () => (await store.countRequest('alice', 3, 1000)) === 0, 2000)
  t.ok(Date.now() - first >= 995, 'admitted again once the window, counted from the first request, ended')
})

test('request rate: two stores (two replicas) share the count exactly', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const stores = [openStore(t, server), openStore(t, server)]
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (stores[i % 2] as LimitStore).countRequest('carol', 10, 60_000)))
  t.equal(results.filter((msLeft) => msLeft === 0).length, 10, 'exactly 10 of 30 admitted over both')
  t.ok(results.every((msLeft) => msLeft === 0 || (msLeft > 59_000 && msLeft <= 60_000)), 'the refused ones wait for the shared window')
  t.equal(await (stores[0] as LimitStore).countRequest('carol', 10, 60_000) > 0, true, 'and stay refused on either')
})

test('request rate: the calls of one event-loop turn go as one script call, with exact per-key results', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const store = openStore(t, server)
  await store.countRequest('warm-up', 1, 60_000) // loads the script, so one call is one EVALSHA
  await admin.config('RESETSTAT')
  const keys = ['k1', 'k2', 'k3', 'k4']
  const calls = Array.from({ length: 240 }, (_, i) => ({ key: keys[i % 4] as string, reply: store.countRequest(keys[i % 4] as string, 25, 60_000) }))
  const replies = await Promise.all(calls.map(({ reply }) => reply))
  t.equal(await scriptCalls(admin), 1, '240 counts of one turn: one script call')
  for (const key of keys) {
    const ofKey = replies.filter((_, i) => calls[i]?.key === key)
    t.same(ofKey.map((msLeft) => msLeft === 0), [...Array<boolean>(25).fill(true), ...Array<boolean>(35).fill(false)], `${key}: its first 25 admitted, in call order, the other 35 refused`)
  }
  t.same(await Promise.all([store.countRequest('k1', 25, 60_000), store.countRequest('k5', 25, 60_000)]).then((next) => next.map((msLeft) => msLeft === 0)), [false, true], 'the next turn counts on')
  t.equal(await scriptCalls(admin), 2, 'one more call for the next turn')
})

/** Counts `count` requests of `key` one after another; how many were admitted. */
async function admittedOf (store: LimitStore, key: string, limit: number, count: number): Promise<number> {
  let admitted = 0
  for (let i = 0; i < count; i++) if (await store.countRequest(key, limit, 60_000) === 0) admitted++
  return admitted
}

/** Waits until `subscribers` processes listen for requests for reserves. */
async function untilListening (admin: Redis, subscribers: number): Promise<void> {
  await eventually(async () => {
    const [, listening] = await admin.pubsub('NUMSUB', 'test:rate-reserves') as [string, number]
    return listening === subscribers
  })
}

test('request rate: far from its limit, a process counts from places it took ahead, without asking Redis', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const store = openStore(t, server)
  t.equal(await store.countRequest('lena', 1000, 60_000), 0, 'the first request asks Redis')
  await admin.config('RESETSTAT')
  const answers = Array.from({ length: 50 }, () => store.countRequest('lena', 1000, 60_000))
  t.ok(answers.every((answer) => answer === 0), 'the next 50 are admitted at once, without a promise')
  t.equal(await scriptCalls(admin), 0, 'and without a script call')
  t.equal(await admin.hget('test:rate:lena', 'n'), String(1 + Math.floor(999 / 16)), 'Redis holds the places taken: the first request and 1/16 of what was left')
})

test('request rate: near its limit every request is counted by Redis, so small limits stay exact per request', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const store = openStore(t, server)
  t.equal(await admittedOf(store, 'mia', 16, 16), 16)
  t.equal(await admin.hget('test:rate:mia', 'n'), '16', 'no place was taken ahead (fewer than 17 were left)')
  t.ok(await store.countRequest('mia', 16, 60_000) > 0, 'the 17th is refused')
})

test('request rate: a process that runs out is given the places another process took ahead and did not use (exact over two stores)', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const a = openStore(t, server)
  const b = openStore(t, server)
  t.equal(await a.countRequest('nina', 100, 60_000), 0)
  t.equal(await admin.hget('test:rate:nina', 'n'), '7', 'a took 6 places ahead of its requests')
  t.equal(await b.countRequest('nina', 100, 60_000), 0)
  await untilListening(admin, 2)
  t.equal(await admittedOf(b, 'nina', 100, 120) + 1, 99, 'b is admitted for every place but a\'s first request: 99 of its 121 requests')
  t.equal(await admittedOf(a, 'nina', 100, 5), 0, 'a gave its unused places away, and is refused too')
  t.equal(await admin.hget('test:rate:nina', 'n'), '100', 'exactly the limit was taken')
})

test('request rate: places taken ahead under one limit are given back when the limit changes (a reload lowered it)', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const store = openStore(t, server)
  t.equal(await store.countRequest('olga', 1000, 60_000), 0)
  t.equal(await admin.hget('test:rate:olga', 'n'), '63', 'took 62 places ahead under 1000')
  t.equal(await admittedOf(store, 'olga', 5, 10), 4, 'under a limit of 5, the next request gives them back: 4 more admitted, then refused')
  t.equal(await admin.hget('test:rate:olga', 'n'), '5')
})

test('request rate: a store that closes gives back the places it took ahead', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const store = openStore(t, server)
  t.equal(await store.countRequest('pia', 100, 60_000), 0)
  t.equal(await admin.hget('test:rate:pia', 'n'), '7')
  await store.close()
  t.equal(await admin.hget('test:rate:pia', 'n'), '1', 'only the request it admitted stays counted')
})

test('request rate: when a process holding places ahead died, the one that ran out waits at most the timeout and refuses (the dead one\'s places stay taken until the window ends)', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const store = openStore(t, server)
  const library = join(__dirname, '..', 'lib', 'security', 'redis-limit-store.ts')
  const child = spawn(process.execPath, ['--import=tsx', '-e', `
    const { createRedisLimitStore } = require(${JSON.stringify(library)})
    const store = createRedisLimitStore({ url: ${JSON.stringify(server.url)}, keyPrefix: 'test:', timeout: 1000, leaseTime: 600 })
    Promise.resolve(store.countRequest('quinn', 100, 60000)).then((msLeft) => process.stdout.write(msLeft === 0 ? 'admitted\\n' : 'refused\\n'), () => process.stdout.write('failed\\n'))
    setInterval(() => {}, 1000)
  `], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => { child.kill('SIGKILL'); await exited })
  t.equal(await within(new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()))), 'the child\'s request'), 'admitted')
  child.kill('SIGKILL')
  await exited
  t.equal(await admittedOf(store, 'quinn', 100, 93), 93, 'the 93 places not taken are admitted here')
  const started = Date.now()
  const refused = await store.countRequest('quinn', 100, 60_000)
  const waited = Date.now() - started
  t.ok(refused > 0, 'the next is refused')
  t.ok(waited <= TIMEOUT + 150, `after waiting at most the timeout for the dead holder (${waited} ms)`)
  t.equal(await admin.hget('test:rate:quinn', 'n'), '100')
})

test('tunnel slots: capped over two stores, given back by release (once) and by close', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const a = openStore(t, server)
  const b = openStore(t, server)
  const racing = await Promise.all([a.acquireSlot('race', 3), b.acquireSlot('race', 3), a.acquireSlot('race', 3), b.acquireSlot('race', 3)])
  t.equal(racing.filter((release) => release !== null).length, 3, 'exactly 3 of 4 concurrent acquisitions over both stores')

  const first = await a.acquireSlot('dave', 3)
  t.not(first, null)
  t.not(await a.acquireSlot('dave', 3), null)
  t.not(await b.acquireSlot('dave', 3), null)
  t.equal(await a.acquireSlot('dave', 3), null, 'full on one')
  t.equal(await b.acquireSlot('dave', 3), null, 'full on the other')
  t.not(await a.acquireSlot('erin', 3), null, 'another key has its own slots')

  first?.()
  first?.()
  await eventually(async () => (await b.acquireSlot('dave', 3)) !== null)
  t.pass('a released slot can be taken by the other store')
  t.equal(await b.acquireSlot('dave', 3), null, 'releasing twice gave back one slot')

  await a.close()
  t.not(await b.acquireSlot('dave', 3), null, 'the slot a closed store held is given back at once')
  t.equal(await b.acquireSlot('dave', 3), null, 'and only that one')
  await t.rejects(a.acquireSlot('dave', 3), UNAVAILABLE, 'a closed store takes nothing')
})

test('tunnel slots: a live store keeps its leases past leaseTime', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const holder = openStore(t, server, { leaseTime: 600 })
  const other = openStore(t, server, { leaseTime: 600 })
  const release = await holder.acquireSlot('frank', 1)
  t.not(release, null)
  const started = Date.now()
  while (Date.now() - started < 1500) {
    if (await other.acquireSlot('frank', 1) !== null) t.fail(`taken after ${Date.now() - started} ms though its holder renews it`)
    await sleep(50)
  }
  release?.()
  t.ok(await acquiredAfter(() => other.acquireSlot('frank', 1), 2000) < 500, 'free once released')
})

test('tunnel slots: the slots of a process that dies come back when its leases expire', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const store = openStore(t, server, { leaseTime: 600 })
  const library = join(__dirname, '..', 'lib', 'security', 'redis-limit-store.ts')
  const child = spawn(process.execPath, ['--import=tsx', '-e', `
    const { createRedisLimitStore } = require(${JSON.stringify(library)})
    const store = createRedisLimitStore({ url: ${JSON.stringify(server.url)}, keyPrefix: 'test:', timeout: 1000, leaseTime: 600 })
    Promise.all([store.acquireSlot('gina', 2), store.acquireSlot('gina', 2)])
      .then((slots) => process.stdout.write(slots.every((slot) => slot !== null) ? 'held\\n' : 'full\\n'), () => process.stdout.write('failed\\n'))
    setInterval(() => {}, 1000)
  `], { stdio: ['ignore', 'pipe', 'inherit'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => { child.kill('SIGKILL'); await exited })
  const said = await within(new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()))), 'the child taking its slots')
  t.equal(said, 'held', 'the other process holds both slots')
  t.equal(await store.acquireSlot('gina', 2), null, 'none left')

  child.kill('SIGKILL')
  await exited
  // When its first lease expires, on Redis's clock: its last renewal plus leaseTime.
  const [expiry, now] = await admin.eval(`local time = redis.call('TIME')
    local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return { first[2], tostring(tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)) }`, 1, 'test:slots:gina') as [string, string]
  const expiresIn = Number(expiry) - Number(now)
  t.ok(expiresIn > 0 && expiresIn <= 600, `its lease had ${expiresIn} ms left, at most leaseTime`)
  t.equal(await store.acquireSlot('gina', 2), null, 'not given back when its process dies')
  const after = await acquiredAfter(() => store.acquireSlot('gina', 2), 2000)
  t.ok(after >= expiresIn - 10, `given back once its lease expired (after ${after} ms, with ${expiresIn} ms left when it died)`)
})

test('authentication failures: counted over two stores and told to both', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const a = openStore(t, server)
  const b = openStore(t, server)
  const heard: Record<'a' | 'b', Array<[string, AuthFailureCount]>> = { a: [], b: [] }
  a.onAuthFailures((client, count) => heard.a.push([client, count]))
  b.onAuthFailures((client, count) => heard.b.push([client, count]))
  await eventually(async () => {
    const [, subscribers] = await admin.pubsub('NUMSUB', 'test:auth-failures') as [string, number]
    return subscribers === 2
  })

  const first = await a.recordAuthFailure('203.0.113.7', 1000)
  const second = await b.recordAuthFailure('203.0.113.7', 1000)
  t.equal(first.failures, 1)
  t.ok(first.msLeft > 900 && first.msLeft <= 1000, `the window starts at the first failure (${first.msLeft} ms left)`)
  t.equal(second.failures, 2, 'the other store counts on')
  t.ok(second.msLeft <= first.msLeft, 'in the same window')
  t.equal((await b.recordAuthFailure('198.51.100.1', 1000)).failures, 1, 'another client counts on its own')

  await eventually(() => heard.a.length === 3 && heard.b.length === 3)
  for (const side of ['a', 'b'] as const) {
    t.same(heard[side].map(([client, { failures }]) => [client, failures]), [['203.0.113.7', 1], ['203.0.113.7', 2], ['198.51.100.1', 1]], `store ${side} hears every failure, its own and the other's`)
  }
  t.same(heard.b[0]?.[1], first, 'with the counts recorded')
})

test('password: taken from the settings or the URL, never in the label or a message', { skip }, async (t) => {
  const password = 'pw-S3cret!'
  const server = await startRedisServer(t, { password })
  const fromSettings = openStore(t, server, { password })
  t.equal(await fromSettings.countRequest('hank', 1, 60_000), 0, 'the settings\' password authenticates')
  t.equal(fromSettings.label, `redis://127.0.0.1:${server.port}/0`)

  const inUrl = `redis://:${encodeURIComponent(password)}@127.0.0.1:${server.port}/0`
  const fromUrl = openStore(t, server, { url: inUrl })
  t.ok(await fromUrl.countRequest('hank', 1, 60_000) > 0, 'the URL\'s password authenticates (the second request of the key: refused)')
  t.equal(fromUrl.label, `redis://127.0.0.1:${server.port}/0`, 'the label leaves it out')

  const overridden = openStore(t, server, { url: `redis://user-x:wrong-one@127.0.0.1:${server.port}/0`, password: 'also-wrong' })
  const outcome = await within(Promise.resolve(overridden.countRequest('hank', 1, 60_000)).then(() => null, (error: unknown) => error), 'a refused password')
  t.match(outcome, UNAVAILABLE, 'a wrong password makes the store unavailable')
  const message = outcome instanceof Error ? outcome.message : ''
  t.ok(!message.includes('wrong-one') && !message.includes('also-wrong') && !message.includes(password), `no password in "${message}"`)
  t.equal(overridden.label, `redis://127.0.0.1:${server.port}/0`)
  const tls = createRedisLimitStore({ url: 'rediss://u:p%40ss@[::1]:6380/2', keyPrefix: 'test:', timeout: TIMEOUT, leaseTime: 1000 })
  t.teardown(() => tls.close())
  t.equal(tls.label, 'rediss://[::1]:6380/2', 'scheme, host, port and database only')
})

test('a Redis that dies: calls reject within the timeout, availability goes false once, then true when it is back', { skip }, async (t) => {
  const server = await startRedisServer(t)
  // The store's connection is one the test can watch reconnect, made the way the store makes its own.
  const client = new Redis(server.url, { retryStrategy: () => 100, maxRetriesPerRequest: 0, enableOfflineQueue: false })
  client.on('error', () => {})
  t.teardown(() => client.disconnect())
  let reconnections = 0
  client.on('reconnecting', () => { reconnections++ })
  const store = openStore(t, server, { client })
  const availability: boolean[] = []
  store.onAvailability((available) => availability.push(available))
  t.equal(await store.countRequest('ivan', 5, 60_000), 0)

  await server.kill()
  await rejectsInTime(t, () => store.countRequest('ivan', 5, 60_000), 'a count')
  await rejectsInTime(t, () => store.acquireSlot('ivan', 5), 'a slot')
  await rejectsInTime(t, () => store.recordAuthFailure('192.0.2.1', 60_000), 'a failure')
  await eventually(() => availability.length > 0)
  // Two more failed reconnection attempts, each one an error of the connection.
  const seen = reconnections
  await eventually(() => reconnections >= seen + 2, 3000)
  await rejectsInTime(t, () => store.countRequest('ivan', 5, 60_000), 'a count while it reconnects')
  t.same(availability, [false], 'told once that it is unavailable')

  await server.restart()
  await eventually(() => availability.length === 2, 3000)
  t.same(availability, [false, true], 'and once that it is back')
  t.equal(await store.countRequest('ivan', 5, 60_000), 0, 'counting again (on an empty Redis)')
  t.not(await store.acquireSlot('ivan', 5), null)
})

test('a Redis that hangs: calls reject within the timeout', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const store = openStore(t, server)
  const availability: boolean[] = []
  store.onAvailability((available) => availability.push(available))
  t.equal(await store.countRequest('judy', 5, 60_000), 0)

  server.pause()
  t.teardown(() => server.resume())
  await rejectsInTime(t, () => store.countRequest('judy', 5, 60_000), 'a count')
  await rejectsInTime(t, () => store.acquireSlot('judy', 5), 'a slot')
  t.same(availability, [false], 'told it is unavailable')

  server.resume()
  await eventually(async () => (await Promise.resolve(store.countRequest('judy', 5, 60_000)).catch(() => -1)) >= 0, 3000)
  t.same(availability, [false, true], 'and that it is back once it answers')
})

test('a client of the application: used, never closed; the subscriber the store made is', { skip }, async (t) => {
  const server = await startRedisServer(t)
  const admin = adminOf(t, server)
  const client = new Redis(server.url)
  t.teardown(() => client.disconnect())
  await within(new Promise<void>((resolve) => client.once('ready', () => resolve())), 'the client connecting')
  const store = createRedisLimitStore({ client, keyPrefix: 'test:', timeout: TIMEOUT, leaseTime: 30_000 })
  t.equal(store.label, `redis://127.0.0.1:${server.port}/0`)
  store.onAuthFailures(() => {})
  t.equal(await store.countRequest('kate', 1, 60_000), 0, 'counts through it')
  const connections = async (): Promise<number> => (await admin.client('LIST') as string).trim().split('\n').length
  await eventually(async () => (await connections()) === 3) // admin, client, subscriber

  await store.close()
  t.equal(client.status, 'ready', 'the application\'s client is left open')
  t.equal(await client.ping(), 'PONG')
  await eventually(async () => (await connections()) === 2)
  t.pass('the subscriber is closed')
  t.equal(client.listenerCount('error'), 0, 'and the store\'s listeners removed')
})

test('no unhandled rejections', async (t) => {
  // Every store of the tests above is closed by now: a call that timed out was rejected by the
  // client then (commandTimeout), and a late answer is dropped. Node reports a rejection nobody
  // handled once the microtasks after it have run; one turn of the event loop lets the last report.
  await new Promise((resolve) => setImmediate(resolve))
  t.same(unhandled, [])
})
