import type { Test } from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { makeInterceptionPki } from './interception-pki'
import { listeningUrls, runBin } from './cli-bin'
import { portOf } from './cli-server'
import { startOrigin } from './servers'
import { rawExchange } from './raw-client'

const curl = promisify(execFile)
const PASSWORD = 'Pr0xy-Passw0rd-7f3a'
const INJECTED_TOKEN = 'Bearer injected-token-91c2e'
const INJECTED_KEY = 'api-key-value-4b8d'
const COOKIE = 'session=cookie-secret-5e1f'
const URL_PASSWORD = 'userinfo-secret-2a9c'

/**
 * Runs the bin with credential injection (header rules setting Authorization and X-Api-Key),
 * proxy users and interception, log level trace in `format`; sends an intercepted request with
 * a cookie, an http:// request, a wrong password and an absolute URL with userinfo; stops it and
 * checks that no secret appears anywhere in its output, and that the access lines are there.
 */
export async function checkLogsHoldNoSecret (t: Test, format: 'json' | 'pretty'): Promise<void> {
  const pki = await makeInterceptionPki(t)
  const seen: Array<Record<string, string | string[] | undefined>> = []
  const origin = createServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key }, (req, res) => {
    seen.push(req.headers)
    res.setHeader('set-cookie', 'origin-session=from-origin')
    res.end('ok')
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  const originPort = (origin.address() as AddressInfo).port
  const plain = await startOrigin(t)

  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { alice: PASSWORD },
    destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
    interception: { hosts: ['127.0.0.1'], ca: { cert: pki.operatorCa.certPath, key: pki.operatorCa.certPath.replace(/\.pem$/, '.key') }, trustedDestinationCa: pki.destinationCa.certPath },
    headers: [{ hosts: ['127.0.0.1'], set: { Authorization: INJECTED_TOKEN, 'X-Api-Key': INJECTED_KEY } }],
    log: { level: 'trace', format }
  }))
  const bin = runBin(t, ['--config', file])
  const [url] = await listeningUrls(bin)
  const port = portOf(url)
  const proxy = `http://alice:${PASSWORD}@127.0.0.1:${port}`

  const intercepted = await curl('curl', ['-sS', '--proxy', proxy, '--cacert', pki.operatorCa.certPath, '-H', `Cookie: ${COOKIE}`, `https://127.0.0.1:${originPort}/api`])
  t.equal(intercepted.stdout, 'ok')
  t.equal(seen[0]?.authorization, INJECTED_TOKEN, 'the credential was injected')
  t.equal(seen[0]?.['x-api-key'], INJECTED_KEY)
  const forwarded = await curl('curl', ['-sS', '--proxy', proxy, '-H', `Cookie: ${COOKIE}`, `http://127.0.0.1:${plain.port}/plain`])
  t.match(forwarded.stdout, /"url":"\/plain"/)
  const wrong = await curl('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--proxy', `http://alice:${PASSWORD}-wrong@127.0.0.1:${port}`, `http://127.0.0.1:${plain.port}/`])
  t.equal(wrong.stdout, '407')
  const basicValue = Buffer.from(`alice:${PASSWORD}`).toString('base64')
  const userinfo = await rawExchange(port, `GET http://bob:${URL_PASSWORD}@127.0.0.1:${plain.port}/x HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: Basic ${basicValue}\r\nConnection: close\r\n\r\n`)
  t.ok(userinfo.status > 0)

  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  const output = `${bin.stdout()}\n${bin.stderr()}`
  for (const secret of [PASSWORD, basicValue, INJECTED_TOKEN, 'injected-token-91c2e', INJECTED_KEY, 'cookie-secret-5e1f', 'from-origin', URL_PASSWORD]) {
    t.notOk(output.includes(secret), `no ${secret} in the logs`)
  }
  if (format === 'json') {
    const access = bin.stdout().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { access?: Record<string, unknown> }).flatMap((entry) => entry.access === undefined ? [] : [entry.access])
    t.match(access.find((entry) => entry.kind === 'intercepted'), { user: 'alice', status: 200, destination: `127.0.0.1:${originPort}` })
    t.match(access.find((entry) => entry.kind === 'forward' && entry.status === 407), { user: null, errorType: 'http_request_denied' })
  } else {
    t.match(bin.stdout(), /^\S+Z INFO {2}proxy access .*access\.kind=intercepted .*access\.user=alice/m, 'one readable line per request')
    t.notMatch(bin.stdout(), /^\{"level"/m, 'no JSON lines')
  }
}
