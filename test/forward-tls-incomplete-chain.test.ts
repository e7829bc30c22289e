import { test } from 'tap'
import { request } from 'undici'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsForwarder, startHttpsOrigin } from './helpers/https-destination'
import { resolveDestinationTlsSettings } from '../lib/forward/destination-tls-settings'

test('HOSTILE 30: a destination that omits its intermediate gets 502 tls_certificate_error; sending the intermediate fixes it', async (t) => {
  const dir = certificateDirectory(t)
  const root = await makeCa(dir, 'root')
  const intermediate = await issueLeaf(dir, 'intermediate', root, { isCa: true })
  const leaf = await issueLeaf(dir, 'leaf', intermediate)
  const trust = resolveDestinationTlsSettings({ trustedDestinationCa: root.cert })

  const leafOnly = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const incomplete = await request(`${(await startHttpsForwarder(t, leafOnly.port, trust)).url}/`)
  t.equal(incomplete.statusCode, 502)
  t.equal(incomplete.headers['proxy-status'], 'fastify-forward-proxy; error=tls_certificate_error; details="UNABLE_TO_VERIFY_LEAF_SIGNATURE"')
  await incomplete.body.dump()
  t.equal(leafOnly.requests.length, 0)

  const withChain = await startHttpsOrigin(t, { cert: leaf.cert + intermediate.cert, key: leaf.key })
  const complete = await request(`${(await startHttpsForwarder(t, withChain.port, trust)).url}/`)
  t.equal(complete.statusCode, 200)
  t.equal(await complete.body.text(), 'ok /')
})
