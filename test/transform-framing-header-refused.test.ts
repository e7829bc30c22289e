import { test } from 'tap'
import { request } from 'undici'
import { startProxy, startSentinel } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const EDITS: Record<string, (headers: Record<string, string | string[]>) => void> = {
  'adds Transfer-Encoding': (headers) => { headers['transfer-encoding'] = 'chunked' },
  'changes Content-Length': (headers) => { headers['content-length'] = '1' },
  'sets a value with CRLF': (headers) => { headers['x-injected'] = 'a\r\nx-smuggled: yes' }
}

for (const [edit, apply] of Object.entries(EDITS)) {
  test(`Transforms cannot break framing: a request transform that ${edit} gets 500 proxy_internal_error and nothing is sent`, async (t) => {
    const sentinel = await startSentinel(t)
    const proxy = await startProxy(t, {
      transforms: [{ transformRequest (_request, _destination, outgoing) { apply(outgoing.headers) } }]
    })
    const res = await request(`http://127.0.0.1:${sentinel.port}/`, { method: 'POST', body: 'abc', dispatcher: absoluteFormAgent(t, proxy.url) })
    t.equal(res.statusCode, 500)
    t.match(String(res.headers['proxy-status']), /^fastify-forward-proxy; error=proxy_internal_error; details="request transform /)
    await res.body.dump()
    await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was sent')
  })
}
