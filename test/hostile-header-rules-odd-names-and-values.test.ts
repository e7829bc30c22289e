import { test } from 'tap'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { createHeaderRulesTransform, ForwardProxyRuleError } from '../lib/index'
import { parseConfig } from './helpers/internals'

test('request headers named after Object members (constructor, toString) toward a host with header rules are forwarded, never a 500 or a stack in the log', async (t) => {
  const origin = await startOrigin(t)
  const logs: string[] = []
  const proxy = await startProxy(t, {
    transforms: [createHeaderRulesTransform([{ hosts: ['127.0.0.1'], set: { 'x-token': 'T' } }])]
  }, undefined, { logger: { level: 'error', stream: { write: (line: string) => { logs.push(line) } } } })
  for (const name of ['constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
    const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/${name} HTTP/1.1\r\nHost: x\r\n${name}: v\r\nConnection: close\r\n\r\n`)
    t.equal(answer.status, 200, `a "${name}" header`)
    const seen = origin.requests.find((request) => request.url === `/${name}`)
    t.equal(seen?.headers[name.toLowerCase()], 'v', 'forwarded as sent')
    t.equal(seen?.headers['x-token'], 'T', 'the rule still applied')
  }
  t.same(logs, [], 'nothing logged as an error')
})

test('header-rule values Node would refuse (U+2028, U+0100, VT, DEL) are refused at start-up, naming the key but not the value', async (t) => {
  for (const code of [0x2028, 0x0100, 0x0b, 0x7f]) {
    const bad = `a${String.fromCodePoint(code)}b`
    const label = `U+${code.toString(16).padStart(4, '0')}`
    const error = t.throws(() => createHeaderRulesTransform([{ hosts: ['a.example'], set: { authorization: `Bearer ${bad}` } }]), label) as Error | undefined
    t.ok(error instanceof ForwardProxyRuleError, label)
    t.match(error?.message, /headers\[0\]\.set\.authorization must be a string of characters allowed in a header value/)
    t.notMatch(error?.message, /Bearer/, 'the value (a secret) is not quoted')
    t.throws(() => parseConfig({ listen: [{ host: '127.0.0.1', port: 0 }], headers: [{ hosts: ['a.example'], set: { authorization: `Bearer ${bad}` } }] }, 'proxy.json', '/srv'), /must be a string of characters allowed in a header value/, 'the server refuses the file')
  }
  t.doesNotThrow(() => createHeaderRulesTransform([{ hosts: ['a.example'], set: { 'x-latin1': 'caf\u00e9', 'x-tab': 'a\tb' } }]), 'tab and obs-text stay allowed')
})

test('header-rule credentials are never added to a TRACE, whose response echoes the request', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {
    transforms: [createHeaderRulesTransform([{ hosts: ['127.0.0.1'], set: { authorization: 'Bearer server-side-secret' }, remove: ['cookie'] }])]
  })
  const traced = await rawExchange(proxy.port, `TRACE http://127.0.0.1:${origin.port}/trace HTTP/1.1\r\nHost: x\r\nMax-Forwards: 3\r\nCookie: c=1\r\nConnection: close\r\n\r\n`)
  t.equal(traced.status, 200)
  const seen = origin.requests.find((request) => request.url === '/trace')
  t.equal(seen?.method, 'TRACE')
  t.equal(seen?.headers.authorization, undefined, 'no credential in the request the origin echoes')
  t.equal(seen?.headers.cookie, undefined, 'remove still applies')
  t.notMatch(traced.text, /server-side-secret/)
  const got = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/get HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(got.status, 200)
  t.equal(origin.requests.find((request) => request.url === '/get')?.headers.authorization, 'Bearer server-side-secret', 'other methods still get it')
})

test('one header rule setting a header twice under names that differ in case (authorization, Authorization) is refused at start-up: both values would be sent, and the destination may read either', async (t) => {
  for (const key of ['set', 'setResponse'] as const) {
    const rule = { hosts: ['a.example'], [key]: { authorization: 'Bearer from-one', Authorization: 'Bearer from-other' } }
    const error = t.throws(() => createHeaderRulesTransform([rule]), key) as Error | undefined
    t.ok(error instanceof ForwardProxyRuleError, key)
    t.match(error?.message, `headers[0].${key}.Authorization names the same header as headers[0].${key}.authorization`)
    t.notMatch(error?.message, /Bearer/, 'no value quoted')
    t.throws(() => parseConfig({ listen: [{ host: '127.0.0.1', port: 0 }], headers: [rule] }, 'proxy.json', '/srv'), /names the same header as/, 'the server refuses the file')
  }
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {
    transforms: [createHeaderRulesTransform([{ hosts: ['127.0.0.1'], set: { authorization: 'Bearer first-rule' } }, { hosts: ['127.0.0.1'], set: { Authorization: 'Bearer second-rule' } }])]
  })
  const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/two-rules HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer client\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 200)
  const raw = origin.requests.find((request) => request.url === '/two-rules')?.rawHeaders ?? []
  const values = raw.filter((_, index) => index % 2 === 1 && raw[index - 1]?.toLowerCase() === 'authorization')
  t.same(values, ['Bearer second-rule'], 'two matching rules: the later one\'s value, once')
})
