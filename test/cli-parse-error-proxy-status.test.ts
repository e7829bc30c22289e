import { test } from 'tap'
import { startOrigin } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const SMUGGLING = (port: number): string => `POST http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n`

test('server: a request Node cannot parse gets 400 with Proxy-Status on the first and on a second listener, never forwarded', async (t) => {
  const origin = await startOrigin(t)
  const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.1', port: 0 }], destinations: LOOPBACK_ORIGINS })
  for (const url of server.urls) {
    const res = await rawExchange(portOf(url), SMUGGLING(origin.port))
    t.equal(res.status, 400, url)
    t.match(res.text, /proxy-status: fastify-forward-proxy; error=http_request_error/i)
  }
  await expectNothingDialedBefore(t, origin.accepts, 'never forwarded')
})
