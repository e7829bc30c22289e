import { test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import { forwardProxy } from '../lib'
import { LOOPBACK_TEST_POLICY } from './helpers/servers'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { startCountingDestination } from './helpers/counting-destination'
import { FRAME, connectRawHttp2, frame, headerBlock } from './helpers/raw-http2'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

test('HTTP/2 slowloris: PINGs or a trickled CONNECT header block are closed at the session timeout', async (t) => {
  const destination = await startCountingDestination(t)
  const tls = await makeSelfSignedCertificate(t.testdir())
  // Fastify's http2SessionTimeout (72 s by default, as in the ready-to-run server), short here.
  const app = Fastify({
    logger: false,
    http2: true,
    https: { allowHTTP1: true, key: tls.key, cert: tls.cert },
    http2SessionTimeout: 500
  }) as unknown as FastifyInstance
  await app.register(forwardProxy, { destinations: LOOPBACK_TEST_POLICY })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = (app.server.address() as AddressInfo).port

  const trickles = {
    'a PING every 100 ms': (): Buffer => frame(FRAME.PING, 0, 0, Buffer.alloc(8)),
    'a CONTINUATION frame every 100 ms': (): Buffer => frame(FRAME.CONTINUATION, 0, 1, headerBlock([['x-a', 'b']]))
  }
  for (const [name, next] of Object.entries(trickles)) {
    const attacker = await connectRawHttp2(port, tls.cert)
    if (name.includes('CONTINUATION')) attacker.socket.write(frame(FRAME.HEADERS, 0, 1, headerBlock([[':method', 'CONNECT'], [':authority', `127.0.0.1:${destination.port}`]])))
    const trickle = setInterval(() => { if (attacker.socket.writable) attacker.socket.write(next()) }, 100)
    t.teardown(() => clearInterval(trickle))
    await attacker.closed
    clearInterval(trickle)
    t.ok(attacker.goawayCode() !== undefined, `${name}: closed with a GOAWAY`)
  }
  await expectNothingDialedBefore(t, destination.accepts, 'nothing dialed')
})
