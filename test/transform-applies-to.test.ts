// A transform that says which requests it applies to (appliesTo) is not run for the others, and
// a request no transform applies to goes out with the head the proxy built, its response head
// not held for transforms; one that throws from appliesTo answers 500.
import { test } from 'tap'
import { request } from 'undici'
import { createHeaderRulesTransform, type ForwardProxyRequestTransform } from '../lib/index'
import { startOrigin, startProxy } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('a transform runs only for the requests its appliesTo accepts: both sides, the others untouched', async (t) => {
  const origin = await startOrigin(t)
  const asked: string[] = []
  const ran: string[] = []
  const localhostOnly: ForwardProxyRequestTransform = {
    appliesTo (_request, destination) {
      asked.push(destination.host)
      return destination.host === 'localhost'
    },
    transformRequest (_request, _destination, outgoing) { ran.push('request'); outgoing.headers['x-tagged'] = 'yes' },
    transformResponse (_request, _destination, response) { ran.push('response'); response.headers['x-seen'] = 'yes' }
  }
  const proxy = await startProxy(t, { transforms: [localhostOnly] })
  const agent = absoluteFormAgent(t, proxy.url)
  const skipped = await request(`http://127.0.0.1:${origin.port}/skipped`, { dispatcher: agent })
  await skipped.body.dump()
  t.same(ran, [], 'neither side ran for a host it does not apply to')
  t.equal(origin.requests[0]?.headers['x-tagged'], undefined)
  t.equal(skipped.headers['x-seen'], undefined)

  const applied = await request(`http://localhost:${origin.port}/applied`, { dispatcher: agent })
  await applied.body.dump()
  t.same(ran, ['request', 'response'])
  t.equal(origin.requests[1]?.headers['x-tagged'], 'yes')
  t.equal(applied.headers['x-seen'], 'yes')
  t.same(asked, ['127.0.0.1', 'localhost'], 'asked once per request')
})

test('an appliesTo that throws answers 500 proxy_internal_error, nothing sent', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, {
    transforms: [{ appliesTo () { throw new Error('broken selector') }, transformRequest () {} }]
  })
  const res = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
  await res.body.dump()
  t.equal(res.statusCode, 500)
  t.match(String(res.headers['proxy-status']), /error=proxy_internal_error; details="transform appliesTo threw"/)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was sent')
})

test('an appliesTo that is not a function is refused at registration', async (t) => {
  const error = await startProxy(t, { transforms: [{ appliesTo: true, transformRequest () {} } as unknown as ForwardProxyRequestTransform] })
    .then(() => null, (caught: unknown) => caught)
  t.equal((error as { option?: string } | null)?.option, 'transforms[0].appliesTo')
})

test('the header rules transform applies only to its rules\' hosts', (t) => {
  const transform = createHeaderRulesTransform([{ hosts: ['*.example.com'], set: { 'x-team': 'a' } }])
  const applies = (host: string): boolean | undefined => transform.appliesTo?.({} as never, { host, port: 443 })
  t.equal(applies('api.example.com'), true)
  t.equal(applies('example.com'), false)
  t.equal(applies('other.test'), false)
  t.end()
})

test('the transforms that apply run in registration order, whichever of the others are left out around them', async (t) => {
  const origin = await startOrigin(t)
  const ran: string[] = []
  const tagging = (name: string, applies?: boolean): ForwardProxyRequestTransform => ({
    ...(applies === undefined ? {} : { appliesTo: () => applies }),
    transformRequest (_request, _destination, outgoing) {
      ran.push(name)
      outgoing.headers['x-ran'] = [...[outgoing.headers['x-ran'] ?? []].flat(), name].join(',')
    }
  })
  const lists: Array<[ForwardProxyRequestTransform[], string[]]> = [
    [[tagging('left-out-first', false), tagging('always'), tagging('applies', true), tagging('left-out', false), tagging('applies-last', true)], ['always', 'applies', 'applies-last']],
    [[tagging('applies-first', true), tagging('left-out', false), tagging('applies-after', true)], ['applies-first', 'applies-after']],
    [[tagging('left-out', false), tagging('left-out-too', false)], []]
  ]
  for (const [transforms, expected] of lists) {
    ran.length = 0
    const proxy = await startProxy(t, { transforms })
    const response = await request(`http://127.0.0.1:${origin.port}/order`, { dispatcher: absoluteFormAgent(t, proxy.url) })
    await response.body.dump()
    t.equal(response.statusCode, 200)
    t.same(ran, expected)
    t.equal(origin.requests.at(-1)?.headers['x-ran'], expected.length === 0 ? undefined : expected.join(','))
  }
})
