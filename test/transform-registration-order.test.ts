import { test } from 'tap'
import { request } from 'undici'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { LOOPBACK_TEST_POLICY, startOrigin } from './helpers/servers'
import { forwardProxy, type ForwardProxyRequestTransform } from '../lib/index'
import { absoluteFormAgent } from './helpers/forward-client'

function appending (name: string): ForwardProxyRequestTransform {
  return {
    async transformRequest (_request, _destination, outgoing) {
      await new Promise((resolve) => setTimeout(resolve, name === 'first' ? 20 : 0))
      outgoing.headers['x-order'] = `${String(outgoing.headers['x-order'] ?? '')}${name};`
    },
    transformResponse (_request, _destination, response) {
      response.headers['x-order'] = `${String(response.headers['x-order'] ?? '')}${name};`
    }
  }
}

test('transforms run in registration order, the transforms option first, then addTransform calls, each awaited before the next', async (t) => {
  const origin = await startOrigin(t)
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY, transforms: [appending('first'), appending('second')] })
  await app.register(async function laterPlugin (instance) {
    instance.forwardProxy.addTransform(appending('third'))
    instance.forwardProxy.addTransform({ transformResponse: appending('response-only').transformResponse })
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const proxyUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const res = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, proxyUrl) })
  await res.body.dump()
  t.equal(origin.requests[0]?.headers['x-order'], 'first;second;third;')
  t.equal(res.headers['x-order'], 'first;second;third;response-only;')
})
