import { test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider, type TlsOrigin } from './helpers/intercepting-proxy'
import { capturedLog, type CapturedLog } from './helpers/captured-log'
import type { ForwardProxySecretSource } from '../lib/index'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const PLACEHOLDER = 'PLACEHOLDER_VAULT_1'

interface Setup {
  origin: TlsOrigin
  log: CapturedLog
  get: (path: string) => Promise<{ status: number, headers: Record<string, string | string[] | undefined>, body: string }>
}

async function setUp (t: Test, source: ForwardProxySecretSource, handler?: (req: IncomingMessage, res: ServerResponse) => void): Promise<Setup> {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, handler ?? ((_req, res) => { res.end('ok') }))
  const log = capturedLog()
  const proxy = await startInterceptingProxy(t, pki, {
    server: { logger: log.logger },
    proxy: { secrets: [{ name: 'vault', source, hosts: [`127.0.0.1:${origin.port}`], placeholder: PLACEHOLDER }] },
    interception: { certificateProvider: staticProvider(pki) }
  })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  return {
    origin,
    log,
    async get (path) {
      const response = await request(`https://127.0.0.1:${origin.port}${path}`, { dispatcher: agent, headers: { authorization: `Bearer ${PLACEHOLDER}` } })
      return { status: response.statusCode, headers: response.headers, body: await response.body.text() }
    }
  }
}

test('Secret source: asked once for requests that need the value together, kept for its maxAge, asked again once it expired', async (t) => {
  const asked: string[] = []
  const maxAge = 60_000
  const setup = await setUp(t, {
    async getValue (name, signal) {
      asked.push(name)
      t.ok(signal instanceof AbortSignal)
      await new Promise((resolve) => setImmediate(resolve))
      return { value: `vault-value-${asked.length}-abcdef`, maxAge }
    }
  })
  const first = await Promise.all([1, 2, 3, 4, 5].map(async (i) => (await setup.get(`/a${i}`)).status))
  t.same(first, [200, 200, 200, 200, 200])
  t.same(asked, ['vault'], 'five requests, one question')
  t.same(new Set(setup.origin.requests.map((seen) => seen.headers.authorization)), new Set(['Bearer vault-value-1-abcdef']))
  t.equal((await setup.get('/b')).status, 200)
  t.equal(asked.length, 1, 'the kept value is still fresh for the next request')
})

test('Secret source: a value whose maxAge has passed is asked for again, and the new value is sent', async (t) => {
  let asked = 0
  const setup = await setUp(t, { getValue: async () => ({ value: `rotating-value-${++asked}-abcdef`, maxAge: 0 }) })
  for (const path of ['/1', '/2', '/3']) t.equal((await setup.get(path)).status, 200)
  t.equal(asked, 3)
  t.same(setup.origin.requests.map((seen) => seen.headers.authorization), ['Bearer rotating-value-1-abcdef', 'Bearer rotating-value-2-abcdef', 'Bearer rotating-value-3-abcdef'])
})

test('Secret source: a source that rejects or gives an unusable value fails the request with 500 secret unavailable, sends nothing and logs no value; the next request asks again', async (t) => {
  const answers: Array<() => Promise<string>> = [
    async () => { throw new Error('vault sealed: token=vault-leak-do-not-log') },
    async () => 'has a space in it',
    async () => `value-with-${PLACEHOLDER}`,
    async () => 'the-good-value-123'
  ]
  const setup = await setUp(t, { getValue: async () => await (answers.shift() as () => Promise<string>)() })
  for (const path of ['/rejected', '/spaces', '/placeholder']) {
    const response = await setup.get(path)
    t.equal(response.status, 500, path)
    t.match(String(response.headers['proxy-status']), /error=proxy_internal_error; details="secret unavailable"/)
  }
  await expectNothingDialedBefore(t, setup.origin.accepts, 'nothing was sent')
  t.equal((await setup.get('/good')).status, 200, 'the next request asked again')
  t.equal(setup.origin.requests[0]?.headers.authorization, 'Bearer the-good-value-123')
  const logged = setup.log.lines().join('\n')
  t.match(logged, /secret \\"vault\\": its source failed: Error/, 'the error log names the secret and what failed')
  t.notOk(logged.includes('vault-leak-do-not-log') || logged.includes('the-good-value-123') || logged.includes('has a space'), 'never a value, nor the source\'s message')
})

test('Secret source: a value from the source echoed in a response header reaches the client as the placeholder', async (t) => {
  const setup = await setUp(t, { getValue: async () => 'source-value-0987654' }, (req, res) => {
    res.setHeader('x-echo', String(req.headers.authorization))
    res.end('ok')
  })
  const response = await setup.get('/echo')
  t.equal(response.headers['x-echo'], `Bearer ${PLACEHOLDER}`)
})

test('Secret source: a source that never answers, ignoring its signal, fails the request with 500 secret unavailable after 10 s, and the next request asks again (the question is not left pending for good)', async (t) => {
  let asked = 0
  const setup = await setUp(t, {
    getValue: async () => {
      asked++
      if (asked === 1) return await new Promise<string>(() => {})
      return 'the-answer-after-a-hang'
    }
  })
  const hung = await setup.get('/hung')
  t.equal(hung.status, 500)
  t.match(String(hung.headers['proxy-status']), /error=proxy_internal_error; details="secret unavailable"/)
  t.match(setup.log.lines().join('\n'), /secret \\"vault\\": its source did not answer within 10 s/)
  await expectNothingDialedBefore(t, setup.origin.accepts, 'nothing was sent')
  t.equal((await setup.get('/next')).status, 200, 'the next request asked again')
  t.equal(asked, 2)
  t.equal(setup.origin.requests[0]?.headers.authorization, 'Bearer the-answer-after-a-hang')
})
