import { test } from 'tap'
import { request } from 'undici'
import { createHeaderRulesTransform, ForwardProxyRuleError } from '../lib/index'
import { startOrigin, startProxy, startSentinel } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// One hop-by-hop list serves the request head, the response head, transforms and header rules.
const HOP_BY_HOP = ['connection', 'proxy-connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'proxy-authenticate', 'proxy-authorization', 'http2-settings']

test('with 4.3.6: a request transform that sets any hop-by-hop header gets 500 proxy_internal_error and nothing is sent', async (t) => {
  const sentinel = await startSentinel(t)
  for (const name of HOP_BY_HOP) {
    const proxy = await startProxy(t, {
      transforms: [{ transformRequest (_request, _destination, outgoing) { outgoing.headers[name] = 'x' } }]
    })
    const res = await request(`http://127.0.0.1:${sentinel.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
    t.equal(res.statusCode, 500, name)
    t.match(String(res.headers['proxy-status']), /details="request transform set an invalid or reserved header"/, name)
    await res.body.dump()
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed')
})

test('with 4.3.6: a response transform that sets any hop-by-hop header (Proxy-Authenticate included: a destination cannot pose as the proxy challenging the client) gets 500 and the destination\'s body is not sent', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('secret body'))
  for (const name of HOP_BY_HOP) {
    const proxy = await startProxy(t, {
      transforms: [{ transformResponse (_request, _destination, response) { response.headers[name] = 'Basic realm="x"' } }]
    })
    const res = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
    t.equal(res.statusCode, 500, name)
    t.match(String(res.headers['proxy-status']), /details="response transform set an invalid or reserved header"/, name)
    t.notMatch(await res.body.text(), /secret body/, name)
  }
})

test('header rules refuse every hop-by-hop name on both sides at start-up, Host and Content-Length on requests, Content-Length on responses', async (t) => {
  for (const name of HOP_BY_HOP) {
    t.throws(() => createHeaderRulesTransform([{ hosts: ['a.example'], set: { [name]: 'x' } }]), ForwardProxyRuleError, `set ${name}`)
    t.throws(() => createHeaderRulesTransform([{ hosts: ['a.example'], setResponse: { [name]: 'x' } }]), ForwardProxyRuleError, `setResponse ${name}`)
    t.throws(() => createHeaderRulesTransform([{ hosts: ['a.example'], removeResponse: [name] }]), ForwardProxyRuleError, `removeResponse ${name}`)
  }
  t.throws(() => createHeaderRulesTransform([{ hosts: ['a.example'], set: { host: 'b.example' } }]), ForwardProxyRuleError)
  t.throws(() => createHeaderRulesTransform([{ hosts: ['a.example'], setResponse: { 'content-length': '1' } }]), ForwardProxyRuleError)
  t.doesNotThrow(() => createHeaderRulesTransform([{ hosts: ['a.example'], set: { authorization: 'Bearer t' }, setResponse: { 'cache-control': 'no-store' } }]))
})

test('beside header rules, a request or response transform that sets a hop-by-hop header is still refused with 500 (the rules\' edits are checked at start-up, the other transform\'s on every request)', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('secret body'))
  const rules = createHeaderRulesTransform([{ hosts: ['127.0.0.1'], set: { 'x-rule': 'on' }, setResponse: { 'x-rule': 'on' } }])
  const requestSide = await startProxy(t, {
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
    transforms: [rules, { transformRequest (_request, _destination, outgoing) { outgoing.headers['transfer-encoding'] = 'chunked' } }]
  })
  const refused = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, requestSide.url) })
  t.equal(refused.statusCode, 500)
  t.match(String(refused.headers['proxy-status']), /details="request transform set an invalid or reserved header"/)
  await refused.body.dump()
  const responseSide = await startProxy(t, {
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
    transforms: [rules, { transformResponse (_request, _destination, response) { response.headers.connection = 'close' } }]
  })
  const cut = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, responseSide.url) })
  t.equal(cut.statusCode, 500)
  t.match(String(cut.headers['proxy-status']), /details="response transform set an invalid or reserved header"/)
  t.notMatch(await cut.body.text(), /secret body/)
})

test('header rules make a request side only when a rule edits requests, and a response side only when one edits responses', async (t) => {
  const requestOnly = createHeaderRulesTransform([{ hosts: ['a.example'], set: { authorization: 'Bearer t' } }])
  t.type(requestOnly.transformRequest, 'function')
  t.equal(requestOnly.transformResponse, undefined, 'no response side: responses pass without a copy of their head')
  const responseOnly = createHeaderRulesTransform([{ hosts: ['a.example'], removeResponse: ['set-cookie'] }])
  t.equal(responseOnly.transformRequest, undefined)
  t.type(responseOnly.transformResponse, 'function')
  const removing = createHeaderRulesTransform([{ hosts: ['a.example'], remove: ['cookie'] }])
  t.type(removing.transformRequest, 'function')
})
