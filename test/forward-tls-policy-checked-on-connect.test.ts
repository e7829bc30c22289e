import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('an https destination whose name resolves to loopback is refused at connect time with 403 destination_ip_prohibited', async (t) => {
  const dir = certificateDirectory(t)
  const ca = await makeCa(dir, 'ca')
  const leaf = await issueLeaf(dir, 'leaf', ca, { san: 'DNS:rebind.test' })
  const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const lookups: string[] = []
  const forwarder = await startInterceptedPath(t, origin.port, { trustedDestinationCa: ca.cert }, {
    destinations: { allowedPorts: '*' },
    resolver: async (hostname) => { lookups.push(hostname); return [{ address: '127.0.0.1', family: 4 }] }
  }, 'rebind.test')

  const res = await forwarder.request('/')
  t.equal(res.statusCode, 403)
  t.match(String(res.headers['proxy-status']), /^fastify-forward-proxy; error=destination_ip_prohibited/)
  await res.body.dump()
  t.same(lookups, ['rebind.test'])
  await expectNothingDialedBefore(t, origin.accepts, 'the loopback address was never dialed')
})
