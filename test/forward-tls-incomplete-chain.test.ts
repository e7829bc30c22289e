import { test } from 'tap'
import { certificateDirectory, makeCa, issueLeaf } from './helpers/destination-certificates'
import { startHttpsOrigin, startInterceptedPath } from './helpers/https-destination'

test('a destination that omits its intermediate gets 502 tls_certificate_error; sending the intermediate fixes it', async (t) => {
  const dir = certificateDirectory(t)
  const root = await makeCa(dir, 'root')
  const intermediate = await issueLeaf(dir, 'intermediate', root, { isCa: true })
  const leaf = await issueLeaf(dir, 'leaf', intermediate)
  const trust = { trustedDestinationCa: root.cert }

  const leafOnly = await startHttpsOrigin(t, { cert: leaf.cert, key: leaf.key })
  const incomplete = await (await startInterceptedPath(t, leafOnly.port, trust)).request('/')
  t.equal(incomplete.statusCode, 502)
  t.equal(incomplete.headers['proxy-status'], 'fastify-forward-proxy; error=tls_certificate_error; details="UNABLE_TO_VERIFY_LEAF_SIGNATURE"')
  await incomplete.body.dump()
  t.equal(leafOnly.requests.length, 0)

  const withChain = await startHttpsOrigin(t, { cert: leaf.cert + intermediate.cert, key: leaf.key })
  const complete = await (await startInterceptedPath(t, withChain.port, trust)).request('/')
  t.equal(complete.statusCode, 200)
  t.equal(await complete.body.text(), 'ok /')
})
