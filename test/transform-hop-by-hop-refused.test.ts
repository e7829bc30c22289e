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
