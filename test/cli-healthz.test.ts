import { test } from 'tap'
import { request } from 'undici'
import { startConfiguredServer } from './helpers/cli-server'

test('server: GET /healthz answers 200 {"status":"ok"} on the proxy port, with proxy auth on', async (t) => {
  const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }], users: { alice: 's3cret' } })
  const res = await request(`${server.urls[0] ?? ''}/healthz`)
  t.equal(res.statusCode, 200, 'the health check is an app route: no Proxy-Authorization needed')
  t.same(await res.body.json(), { status: 'ok' })
})
