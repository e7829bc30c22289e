import { test } from 'tap'
import { request } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'

test('a transform may name headers in any case: X-Tenant is sent as x-tenant, Authorization replaces the client\'s authorization (one value), and Content-Type set on a response replaces the destination\'s', async (t) => {
  const origin = await startOrigin(t, (req, res) => {
    res.setHeader('content-type', 'text/plain')
    res.end(JSON.stringify(req.rawHeaders))
  })
  const proxy = await startProxy(t, {
    transforms: [{
      transformRequest (_request, _destination, outgoing) {
        outgoing.headers['X-Tenant'] = 'blue'
        outgoing.headers.Authorization = 'Bearer from-the-transform'
      },
      transformResponse (_request, _destination, response) {
        response.headers['Content-Type'] = 'application/json'
      }
    }]
  })
  const res = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url), headers: { authorization: 'Bearer from-the-client' } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/json', 'one Content-Type, the transform\'s')
  const raw = JSON.parse(await res.body.text()) as string[]
  const valuesOf = (name: string): string[] => raw.filter((_, index) => index % 2 === 1 && raw[index - 1]?.toLowerCase() === name)
  t.same(valuesOf('x-tenant'), ['blue'])
  t.same(valuesOf('authorization'), ['Bearer from-the-transform'], 'the client\'s value replaced, not sent beside it')
})

test('a framing header a transform names in capitals (Transfer-Encoding) is refused like its lower-case name; a response transform\'s failure says so', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('body'))
  const requesting = await startProxy(t, { transforms: [{ transformRequest (_request, _destination, outgoing) { outgoing.headers['Transfer-Encoding'] = 'chunked' } }] })
  const refused = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, requesting.url) })
  t.equal(refused.statusCode, 500)
  t.match(String(refused.headers['proxy-status']), /details="request transform set an invalid or reserved header"/)
  t.match(await refused.body.text(), /A request transform failed/)
  const responding = await startProxy(t, { transforms: [{ transformResponse (_request, _destination, response) { response.headers.Connection = 'close' } }] })
  const failed = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, responding.url) })
  t.equal(failed.statusCode, 500)
  t.match(String(failed.headers['proxy-status']), /details="response transform set an invalid or reserved header"/)
  t.match(await failed.body.text(), /A response transform failed/)
})
