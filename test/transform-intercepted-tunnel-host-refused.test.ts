import { test } from 'tap'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { interceptEverything } from './helpers/intercepted-forwarding'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('inside an intercepted tunnel a transform that points Host at another authority gets 500 proxy_internal_error, and the destination sees nothing', async (t) => {
  const setup = await interceptEverything(t, {
    transforms: [{ transformRequest (_request, _destination, outgoing) { outgoing.headers.host = 'internal.example' } }]
  })
  const origin = await startTlsOrigin(t, setup.pki)
  const res = await setup.get(origin.port)
  t.equal(res.status, 500)
  t.equal(res.proxyStatus, 'fastify-forward-proxy; error=proxy_internal_error; details="request transform set a Host for another authority"')
  await expectNothingDialedBefore(t, origin.accepts, 'the destination sees nothing')
})
