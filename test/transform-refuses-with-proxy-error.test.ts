import { test } from 'tap'
import { request } from 'undici'
import { createHeaderRulesTransform, ForwardProxyRuleError, ProxyError } from '../lib/index'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a transform that throws a ProxyError refuses the request with that status and Proxy-Status; nothing is sent', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, {
    transforms: [{ transformRequest () { throw new ProxyError('http_request_denied', 'Not on weekends.', { status: 403, details: 'refused by a transform' }) } }]
  })
  const res = await request(`http://127.0.0.1:${sentinel.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
  t.equal(res.statusCode, 403)
  t.equal(res.headers['proxy-status'], 'fastify-forward-proxy; error=http_request_denied; details="refused by a transform"')
  await res.body.dump()
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was sent')
})

test('a transform\'s ProxyError with a status that is not an error (101, 200, 99, 1000) or an unknown type is answered 500 proxy_internal_error, never sent as it is', async (t) => {
  const sentinel = await startSentinel(t)
  const invalid = [
    new ProxyError('http_request_denied', 'Switch.', { status: 101 }),
    new ProxyError('http_request_denied', 'Fine.', { status: 200 }),
    new ProxyError('http_request_denied', 'Low.', { status: 99 }),
    new ProxyError('http_request_denied', 'High.', { status: 1000 }),
    new ProxyError('nonsense_type\r\nx-injected: 1' as 'http_request_denied', 'Odd.', { status: 403 })
  ]
  for (const error of invalid) {
    const proxy = await startProxy(t, { transforms: [{ transformRequest () { throw error } }] })
    const res = await request(`http://127.0.0.1:${sentinel.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
    t.equal(res.statusCode, 500, `status ${error.status}, type ${JSON.stringify(error.errorType)}`)
    t.match(res.headers['proxy-status'], /^fastify-forward-proxy; error=proxy_internal_error/)
    t.equal(res.headers['x-injected'], undefined)
    await res.body.dump()
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was sent')
})

test('Header rules: a tlsOnly rule never sends its headers over plain http:// (403 http_request_denied, nothing sent); its remove-only and response parts, TRACE and other hosts are unaffected', async (t) => {
  const origin = await startOrigin(t)
  const rules = [
    { hosts: ['127.0.0.1'], set: { authorization: 'Bearer server-side' }, tlsOnly: true },
    { hosts: ['localhost'], remove: ['cookie'], setResponse: { 'x-rule': 'yes' }, tlsOnly: true }
  ]
  const proxy = await startProxy(t, { destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' }, transforms: [createHeaderRulesTransform(rules)] })
  const dispatcher = absoluteFormAgent(t, proxy.url)

  const refused = await request(`http://127.0.0.1:${origin.port}/secret`, { dispatcher })
  t.equal(refused.statusCode, 403)
  t.equal(refused.headers['proxy-status'], 'fastify-forward-proxy; error=http_request_denied; details="credentials are not sent over plain http"')
  await refused.body.dump()

  const trace = await request(`http://127.0.0.1:${origin.port}/trace`, { dispatcher, method: 'TRACE' })
  t.equal(trace.statusCode, 200, 'a TRACE carries no injected header, so it is not refused')
  await trace.body.dump()

  const other = await request(`http://localhost:${origin.port}/other`, { dispatcher, headers: { cookie: 'a=b' } })
  t.equal(other.statusCode, 200, 'a tlsOnly rule without set headers does not refuse')
  t.equal(other.headers['x-rule'], 'yes')
  await other.body.dump()
  t.same(origin.requests.map((seen) => [seen.url, seen.headers.authorization, seen.headers.cookie]), [['/trace', undefined, undefined], ['/other', undefined, undefined]])
  t.throws(() => createHeaderRulesTransform([{ hosts: ['a.example'], tlsOnly: 'yes' as unknown as boolean }]), ForwardProxyRuleError)
})
