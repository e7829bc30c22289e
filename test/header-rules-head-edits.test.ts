// The header rules edit the head the proxy built as it is when they are the only transforms, and
// through a header object when other transforms run too: both must send the same headers.
import { test, type Test } from 'tap'
import { createHeaderRulesTransform, type ForwardProxyHeaderRule, type ForwardProxyRequestTransform } from '../lib/index'
import { type Origin, startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'

const RULES: ForwardProxyHeaderRule[] = [
  { hosts: ['127.0.0.1'], set: { 'X-Team': 'blue', Authorization: 'Bearer injected' }, remove: ['Cookie', 'X-Drop'] },
  { hosts: ['127.0.0.1'], set: { 'X-Second': 'two' }, remove: ['x-team'] },
  { hosts: ['elsewhere.example'], set: { 'X-Not-Here': 'no' } }
]

// Headers as the client sends them: repeats, mixed case, names the rules remove and replace.
const CLIENT_HEADERS = [
  'Authorization: Bearer client-own',
  'Authorization: Bearer client-second',
  'Cookie: a=1',
  'X-DROP: gone',
  'X-Keep: 1',
  'x-keep: 2',
  'X-Team: client',
  'Accept: text/plain'
]

/** The header lines the origin received for one request through a proxy with `transforms`, names lower-cased, in order. */
async function receivedThrough (t: Test, origin: Origin, transforms: ForwardProxyRequestTransform[]): Promise<string[]> {
  const proxy = await startProxy(t, { transforms })
  const head = [`GET http://127.0.0.1:${origin.port}/edited HTTP/1.1`, `Host: 127.0.0.1:${origin.port}`, ...CLIENT_HEADERS, 'Connection: close']
  const answer = await rawExchange(proxy.port, `${head.join('\r\n')}\r\n\r\n`)
  t.equal(answer.status, 200)
  const raw = origin.requests.at(-1)?.rawHeaders ?? []
  const lines: string[] = []
  for (let i = 0; i + 1 < raw.length; i += 2) lines.push(`${(raw[i] as string).toLowerCase()}: ${raw[i + 1] as string}`)
  return lines
}

const sorted = (lines: string[]): string[] => [...lines].sort()

test('header rules: in rule order, names removed in any case and set replacing every repeat the client sent, the rest kept with its repeats in order; the same whether the rules run alone or beside another transform', async (t) => {
  const origin = await startOrigin(t)
  const alone = await receivedThrough(t, origin, [createHeaderRulesTransform(RULES)])
  const withAnother = await receivedThrough(t, origin, [createHeaderRulesTransform(RULES), { transformRequest () {} }])
  const sent = (lines: string[], name: string): string[] => lines.filter((line) => line.startsWith(`${name}: `))
  for (const [label, lines] of [['rules alone', alone], ['rules beside another transform', withAnother]] as const) {
    t.same(sent(lines, 'authorization'), ['authorization: Bearer injected'], `${label}: a set name replaces every value the client sent`)
    t.same(sent(lines, 'cookie'), [], `${label}: removed`)
    t.same(sent(lines, 'x-drop'), [], `${label}: removed whatever its case`)
    t.same(sent(lines, 'x-team'), [], `${label}: the second rule removes what the first set`)
    t.same(sent(lines, 'x-second'), ['x-second: two'], `${label}: the second rule's own set`)
    t.same(sent(lines, 'x-not-here'), [], `${label}: a rule for another host does nothing`)
    t.same(sent(lines, 'x-keep'), ['x-keep: 1', 'x-keep: 2'], `${label}: other repeats kept in order`)
    t.same(sent(lines, 'accept'), ['accept: text/plain'], `${label}: other headers kept`)
  }
  t.same(sorted(alone), sorted(withAnother), 'the same header lines either way')
})
