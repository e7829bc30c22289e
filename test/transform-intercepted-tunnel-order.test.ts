import { test } from 'tap'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { interceptEverything } from './helpers/intercepted-forwarding'
import type { ForwardProxyRequestTransform } from '../lib/index'

test('transforms from forwardProxy and from tlsInterception run in that order inside an intercepted tunnel, on the built request (Host of the CONNECT target) and on the response', async (t) => {
  const seenHosts: string[] = []
  const tag = (name: string): ForwardProxyRequestTransform => ({
    transformRequest (request, destination, outgoing) {
      seenHosts.push(String(outgoing.headers.host))
      t.same(request.interception, { destination }, 'the request is the intercepted one')
      outgoing.headers['x-order'] = `${String(outgoing.headers['x-order'] ?? '')}${name};`
    },
    transformResponse (_request, _destination, response) {
      response.headers['x-order'] = `${String(response.headers['x-order'] ?? '')}${name};`
    }
  })
  const setup = await interceptEverything(t, { transforms: [tag('interception')] }, { transforms: [tag('proxy')] })
  const origin = await startTlsOrigin(t, setup.pki)

  const res = await setup.get(origin.port, '/x')
  t.equal(res.status, 200)
  t.equal(origin.requests[0]?.headers['x-order'], 'proxy;interception;')
  t.equal(res.headers['x-order'], 'proxy;interception;')
  t.same(seenHosts, [`127.0.0.1:${origin.port}`, `127.0.0.1:${origin.port}`])
  t.match(String(origin.requests[0]?.headers.via), /fastify-forward-proxy/)
})
