import { test } from 'tap'
import { request } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'

test('transformResponse edits the response head before it is written: sees status and headers after hop-by-hop removal, sets, removes and changes the status', async (t) => {
  const origin = await startOrigin(t, (_req, res) => {
    res.setHeader('connection', 'x-origin-hop')
    res.setHeader('x-origin-hop', 'hop')
    res.setHeader('set-cookie', ['a=1', 'b=2'])
    res.setHeader('server', 'origin/1.0')
    res.end('body stays')
  })
  const seen: Array<{ status: number, headers: Record<string, string | string[]> }> = []
  const proxy = await startProxy(t, {
    transforms: [{
      transformResponse (_request, _destination, response) {
        seen.push({ status: response.statusCode, headers: structuredClone(response.headers) })
        delete response.headers.server
        response.headers['x-transformed'] = 'yes'
        response.statusCode = 203
      }
    }]
  })
  const res = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url) })
  t.equal(res.statusCode, 203)
  t.equal(await res.body.text(), 'body stays')
  t.equal(res.headers['x-transformed'], 'yes')
  t.equal(res.headers.server, undefined)
  t.equal(seen[0]?.status, 200)
  t.same(seen[0]?.headers['set-cookie'], ['a=1', 'b=2'], 'repeated headers as arrays')
  t.equal(seen[0]?.headers['x-origin-hop'], undefined, 'Connection-listed header already removed')
  t.equal(seen[0]?.headers.connection, undefined)
  t.equal(seen[0]?.headers.via, '1.1 fastify-forward-proxy')
})
