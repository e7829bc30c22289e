import { test } from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { interceptionConfig, makeInterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { startOrigin } from './helpers/servers'
import { portOf } from './helpers/cli-server'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'
import { within } from './helpers/within'

const curl = promisify(execFile)
const SECRET = 'sk-live-3a1f2e7f3c9a1e5b2d4c6f8a0b9e7d5c'

test('bin: "mode": "report" on destinations and on a user forwards what their host lists would refuse and logs it "would-deny" with the rule; a header rule\'s secret is not injected into such a request (403, nothing sent)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const plainOrigin = await startOrigin(t)
  const tlsOrigin = await startTlsOrigin(t, pki)
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { trial: { password: 'pw', allowedHosts: ['listed.test'], mode: 'report' } },
    destinations: { mode: 'report', allowedHosts: ['127.0.0.1'], allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
    interception: interceptionConfig(pki, ['127.0.0.1']),
    secrets: { api: { env: 'FFP_TEST_API_TOKEN', hosts: [`127.0.0.1:${tlsOrigin.port}`] } },
    headers: [{ hosts: ['127.0.0.1'], set: { Authorization: 'Bearer {{secret:api}}' } }],
    log: { level: 'info' }
  }))
  const bin = runBin(t, ['--config', file], { FFP_TEST_API_TOKEN: SECRET })
  const [url] = await listeningUrls(bin)
  t.match(bin.stdout(), /authentication: on \(Basic, 1 user\); allowedHosts in report mode for trial/, 'the start-up summary says which user only reports')
  t.match(bin.stdout(), /destinations: hosts 127\.0\.0\.1 \(report mode: host lists logged as would-deny, not enforced\)/, 'and that the destination lists only report')
  const proxy = `http://trial:pw@127.0.0.1:${portOf(url)}`

  // `localhost` is in neither list: destinations.allowedHosts would refuse it first.
  const reported = await curl('curl', ['-sS', '--proxy', proxy, `http://localhost:${plainOrigin.port}/reported`])
  t.match(reported.stdout, /"url":"\/reported"/, 'the request the lists would refuse reached the origin')
  const injected = await curl('curl', ['-sS', '-i', '--proxy', proxy, '--cacert', pki.operatorCa.certPath, `https://127.0.0.1:${tlsOrigin.port}/v1/me`])
  t.match(injected.stdout, /\r\nHTTP\/2 403 /)
  t.match(injected.stdout, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="secret not sent: host not allowed for this user \(report mode\)"/i)
  t.equal(tlsOrigin.requests.length, 0)
  await expectNothingDialedBefore(t, tlsOrigin.accepts, 'nothing was sent to the secret\'s host')

  // The tunnel's line is written when curl's connection closes: wait for it rather than race the shutdown.
  await within(new Promise<void>((resolve) => {
    const check = (): void => { if (bin.stdout().includes('"kind":"tunnel"')) { bin.child.stdout.removeListener('data', check); resolve() } }
    bin.child.stdout.on('data', check)
    check()
  }), 'the tunnel\'s access line', 10_000)
  bin.child.kill('SIGTERM')
  await bin.exited
  const access = bin.stdout().split('\n').filter((line) => line.includes('"access"')).map((line) => (JSON.parse(line) as { access: Record<string, unknown> }).access)
  t.match(access.find((entry) => entry.kind === 'forward'), {
    user: 'trial', destination: `localhost:${plainOrigin.port}`, address: `127.0.0.1:${plainOrigin.port}`, intercepted: false, status: 200, decision: 'would-deny', reason: 'host not allowed', rule: 'destinations.allowedHosts'
  })
  t.match(access.find((entry) => entry.kind === 'intercepted'), {
    user: 'trial', status: 403, intercepted: true, decision: 'deny', reason: 'secret not sent: host not allowed for this user (report mode)', rule: 'users.trial.allowedHosts', secrets: ['api']
  })
  t.match(access.find((entry) => entry.kind === 'tunnel'), { tunnel: 'intercepted', intercepted: true, decision: 'would-deny', rule: 'users.trial.allowedHosts' })
  t.notOk(bin.stdout().includes(SECRET) || bin.stderr().includes(SECRET), 'the value is in no output')
})
