import { connect } from 'node:net'
import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, rawExchange } from './helpers/raw-client'
import { AuthFailureLimiter } from './helpers/internals'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const USERS = { alice: 's3cret' }

function forwardedGet (originPort: number, authorization: string, last: boolean): string {
  return `GET http://127.0.0.1:${originPort}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${authorization}\r\n${last ? 'Connection: close\r\n' : ''}\r\n`
}

/** Writes every request at once on one connection and returns the status of each response, in order. */
function pipelined (port: number, requests: string[], timeoutMs = 10_000): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no close within ${timeoutMs} ms`)) }, timeoutMs)
    socket.on('connect', () => socket.write(requests.join('')))
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      const text = Buffer.concat(chunks).toString('latin1')
      // Not anchored to a line start: a body without a final line end runs into the next status line.
      resolve([...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1])))
    })
  })
}

test('brute force pipelined: of 200 guesses written at once on one connection, only maxFailures are checked; the right password at 151 gets 429', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: USERS, failureLimit: { maxFailures: 10, window: 600_000 } } })
  const requests = Array.from({ length: 200 }, (_, i) => forwardedGet(origin.port, basic('alice', i === 150 ? 's3cret' : `guess-${i}`), i === 199))
  const statuses = await pipelined(proxy.port, requests)
  t.equal(statuses.length, 200, 'every pipelined request is answered')
  t.same(statuses.slice(0, 10), Array(10).fill(407), 'the first maxFailures guesses are checked and refused')
  t.same(statuses.slice(10), Array(190).fill(429), 'every later one is locked out, checked or not')
  t.equal(statuses[150], 429, 'the right password inside the burst does not get through')
  await expectNothingDialedBefore(t, origin.accepts, 'nothing forwarded')
  const after = await rawExchange(proxy.port, forwardedGet(origin.port, basic('alice', 's3cret'), true))
  t.equal(after.status, 429, 'the client stays locked out for the rest of its window')
})

test('brute force pipelined: a burst of 1,000 guesses gets maxFailures credential checks, not hundreds', async (t) => {
  const origin = await startOrigin(t)
  let checks = 0
  const proxy = await startProxy(t, { auth: { validate: () => { checks += 1; return false } } })
  const requests = Array.from({ length: 1000 }, (_, i) => forwardedGet(origin.port, basic('alice', `guess-${i}`), i === 999))
  const statuses = await pipelined(proxy.port, requests)
  t.equal(statuses.length, 1000)
  t.equal(checks, 10, 'the default limit: 10 checks per client address')
  t.equal(statuses.filter((status) => status === 407).length, 10)
  t.equal(statuses.filter((status) => status === 429).length, 990)
})

test('brute force concurrent: a slow credential check cannot be raced by many connections at once', async (t) => {
  const origin = await startOrigin(t)
  let checks = 0
  const validate = async (): Promise<boolean> => {
    checks += 1
    await new Promise((resolve) => setTimeout(resolve, 20))
    return false
  }
  const proxy = await startProxy(t, { auth: { validate, failureLimit: { maxFailures: 3, window: 600_000 } } })
  const exchanges = await Promise.all(Array.from({ length: 30 }, (_, i) => rawExchange(proxy.port, forwardedGet(origin.port, basic('alice', `guess-${i}`), true))))
  t.equal(checks, 3, 'never more checks than failures allowed')
  t.equal(exchanges.filter((exchange) => exchange.status === 407).length, 3)
  t.equal(exchanges.filter((exchange) => exchange.status === 429).length, 27)
})

test('brute force pipelined: right passwords written together are all accepted, the limit only holds checks back', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: USERS, failureLimit: { maxFailures: 2, window: 600_000 } } })
  const requests = Array.from({ length: 20 }, (_, i) => forwardedGet(origin.port, basic('alice', 's3cret'), i === 19))
  const statuses = await pipelined(proxy.port, requests)
  t.same(statuses, Array(20).fill(200))
  t.equal(origin.requests.length, 20)
})

test('brute force: a client never has more checks under way than failures left, and waiting attempts are refused once it is locked', async (t) => {
  const limiter = new AuthFailureLimiter({ maxFailures: 2, window: 1000 }, () => 0)
  const admitted: boolean[] = []
  const turns = Array.from({ length: 4 }, () => limiter.admit('192.0.2.1').then((ok) => { admitted.push(ok); return ok }))
  await Promise.resolve()
  t.same(admitted, [true, true], 'two checks run, two wait')
  limiter.settle('192.0.2.1', false)
  await Promise.resolve()
  t.same(admitted, [true, true, true], 'a success frees its turn without using a failure')
  limiter.settle('192.0.2.1', true)
  limiter.settle('192.0.2.1', true)
  t.same(await Promise.all(turns), [true, true, true, false], 'the second failure locks the client: the waiting attempt is refused')
  t.equal(await limiter.admit('192.0.2.1'), false)
  t.equal(await limiter.admit('192.0.2.2'), true, 'other clients are not affected')
})
