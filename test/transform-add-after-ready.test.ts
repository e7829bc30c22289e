import { test } from 'tap'
import Fastify from 'fastify'
import { forwardProxy, ForwardProxyOptionsError, type ForwardProxyRequestTransform } from '../lib/index'

test('transforms are registered before the server is ready; addTransform afterwards throws, and a transform without functions is refused with the option named', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(forwardProxy)
  t.throws(() => app.forwardProxy.addTransform({} as ForwardProxyRequestTransform), ForwardProxyOptionsError)
  t.throws(() => app.forwardProxy.addTransform({ transformRequest: 'no' } as unknown as ForwardProxyRequestTransform), new ForwardProxyOptionsError('addTransform(transform).transformRequest', 'must be a function'))
  app.forwardProxy.addTransform({ transformRequest () {} })
  await app.ready()
  t.throws(() => app.forwardProxy.addTransform({ transformRequest () {} }), /before the server is ready/)

  const bad = Fastify()
  t.teardown(() => bad.close())
  await t.rejects(async () => { await bad.register(forwardProxy, { transforms: [{ transformResponse: 1 } as unknown as ForwardProxyRequestTransform] }) }, new ForwardProxyOptionsError('transforms[0].transformResponse', 'must be a function'))
})
