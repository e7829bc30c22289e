import { test } from 'tap'
import { makeInterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'
import { capturedLog } from './helpers/captured-log'
import { deferred } from './helpers/deferred'
import { eventually } from './helpers/eventually'

test('a request in flight inside an intercepted tunnel that the server\'s shutdown closes is logged closeReason shutdown, not client-gone', async (t) => {
  const pki = await makeInterceptionPki(t)
  const started = deferred()
  const origin = await startTlsOrigin(t, pki, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('start\n')
    started.resolve()
    // The rest never comes: the shutdown cuts the response.
  })
  const log = capturedLog()
  const proxy = await startInterceptingProxy(t, pki, { server: { logger: log.logger }, interception: interceptAll(pki) })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  socket.on('error', () => {})
  let received = ''
  socket.on('data', (chunk: Buffer) => { received += chunk.toString() })
  socket.write(`GET /slow HTTP/1.1\r\nHost: ${target}\r\n\r\n`)
  await started.promise
  await eventually(() => received.includes('start'))
  await proxy.app.close()
  await eventually(() => log.access().some((line) => line.kind === 'intercepted'))
  const line = log.access().find((entry) => entry.kind === 'intercepted')
  t.match(line, { kind: 'intercepted', status: 200, closeReason: 'shutdown' })
})
