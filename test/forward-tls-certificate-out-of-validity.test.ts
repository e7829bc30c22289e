import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

const cases = [
  { name: 'an expired destination certificate from a trusted CA', startDate: '20200101000000Z', endDate: '20200201000000Z', details: 'CERT_HAS_EXPIRED' },
  { name: 'a destination certificate from a trusted CA valid only from 2099', startDate: '20990101000000Z', endDate: '20990201000000Z', details: 'CERT_NOT_YET_VALID' }
]

for (const { name, startDate, endDate, details } of cases) {
  test(`${name} gets 502 tls_certificate_error (${details}) and the request never reaches it`, async (t) => {
    const dir = certificateDirectory(t)
    const ca = await makeCa(dir, 'ca')
    const leaf = await issueLeaf(dir, 'leaf', ca, { startDate, endDate })
    const origin = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
    const forwarder = await startInterceptedPath(t, origin.port, { trustedDestinationCa: ca.cert })

    const res = await forwarder.request('/')
    t.equal(res.statusCode, 502)
    t.equal(res.headers['proxy-status'], `fastify-forward-proxy; error=tls_certificate_error; details="${details}"`)
    await res.body.dump()
    t.equal(origin.requests.length, 0)
  })
}
