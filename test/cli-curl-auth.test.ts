import { test } from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { startOrigin } from './helpers/servers'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const curl = promisify(execFile)

test('server: curl -x with a configured user reaches the origin (forwarding and tunnel); without credentials 407 and nothing forwarded', async (t) => {
  const origin = await startOrigin(t)
  const server = await startConfiguredServer(t, { listen: [{ host: '127.0.0.1', port: 0 }], users: { alice: 's3cret' }, destinations: LOOPBACK_ORIGINS })
  const port = portOf(server.urls[0])
  const forwarded = await curl('curl', ['-sS', '-x', `http://alice:s3cret@127.0.0.1:${port}`, `http://127.0.0.1:${origin.port}/through`])
  t.match(forwarded.stdout, /"url":"\/through"/)
  const tunnelled = await curl('curl', ['-sS', '-p', '-x', `http://alice:s3cret@127.0.0.1:${port}`, `http://127.0.0.1:${origin.port}/tunnel`])
  t.match(tunnelled.stdout, /"url":"\/tunnel"/)
  t.equal(origin.requests.length, 2)
  const dialedBefore = origin.accepts.accepted

  const anonymous = await curl('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-x', `http://127.0.0.1:${port}`, `http://127.0.0.1:${origin.port}/`])
  t.equal(anonymous.stdout, '407')
  const wrong = await curl('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-x', `http://alice:nope@127.0.0.1:${port}`, `http://127.0.0.1:${origin.port}/`])
  t.equal(wrong.stdout, '407')
  t.equal(origin.requests.length, 2)
  await expectNothingDialedBefore(t, origin.accepts, 'the refused requests never reached the origin', { after: dialedBefore })
})
