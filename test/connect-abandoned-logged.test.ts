import { test } from 'tap'
import { connect } from 'node:net'
import { startProxy } from './helpers/servers'
import { startOrderedDestination } from './helpers/ordered-destination'
import { capturedLog } from './helpers/captured-log'
import { installMetrics } from './helpers/metric-reader'
import { eventually } from './helpers/eventually'
import { basic } from './helpers/raw-client'

const ABANDONED = 5

test('a CONNECT whose client leaves before its answer gets one access log line (status 499, closeReason client-gone) and counts outcome abandoned', async (t) => {
  const installed = installMetrics(t)
  const log = capturedLog()
  const destination = await startOrderedDestination(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } }, undefined, { logger: log.logger })
  const target = `127.0.0.1:${destination.port}`
  for (let i = 0; i < ABANDONED; i++) {
    const socket = connect(proxy.port, '127.0.0.1')
    socket.on('error', () => {})
    t.teardown(() => { socket.destroy() })
    // The FIN leaves in the same segment as the head: the client gave up at once.
    socket.end(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\n\r\n`)
  }
  const abandoned = (): Array<Record<string, unknown>> => log.access().filter((line) => line.status === 499)
  await eventually(() => abandoned().length === ABANDONED)
  t.equal(abandoned().length, ABANDONED, 'one line per abandoned CONNECT')
  t.match(abandoned()[0], {
    kind: 'connect',
    method: 'CONNECT',
    user: 'alice',
    client: '127.0.0.1',
    destination: target,
    status: 499,
    errorType: null,
    closeReason: 'client-gone',
    bytesIn: 0,
    bytesOut: 0
  })
  t.strictSame(await installed.sums('forward_proxy.request.outcomes'), {
    '{"forward_proxy.kind":"connect","forward_proxy.outcome":"abandoned"}': ABANDONED
  }, 'counted as abandoned, not as tunnels')
})
