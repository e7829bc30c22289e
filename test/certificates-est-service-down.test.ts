import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'

test('EST service down: a refused connection fails the enrollment at once with est_unreachable', async (t) => {
  // A port that was just free: nothing listens there.
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as AddressInfo).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  const provider = createEstCertificateProvider({ url: `https://127.0.0.1:${port}`, username: 'proxy', password: 'down-secret-51aa', timeout: 3000 })
  t.teardown(() => provider.close())
  const started = Date.now()
  const error = await provider.getLeaf('api.example.com').then(() => null, (caught: unknown) => caught as Error)
  t.match(error, { name: 'ForwardProxyEstError', reason: 'est_unreachable', message: /EST cacerts at https:\/\/127\.0\.0\.1:\d+\/\.well-known\/est failed: .*ECONNREFUSED/ })
  t.notMatch(String(error?.message), /down-secret/)
  t.ok(Date.now() - started < 3000, 'within the timeout')
  t.equal(provider.cacheSize, 0)
})
