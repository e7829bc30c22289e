import { test, type Test } from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { buildEstService } from '../examples/est-dev-service/est-service'
import { fixtureDirectory, makeCa, type CaFixture } from './helpers/ca-fixtures'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './helpers/cli-server'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { expectNothingDialedBefore, logAccepts, type AcceptLog } from './helpers/nothing-dialed'

const curl = promisify(execFile)
const EST_PASSWORD = 'est-password-5d21c7'
const TOKEN = 'Bearer est-config-token'

interface EstFixture {
  readonly ca: CaFixture
  readonly url: string
  /** Paths of the enrollment requests the service answered, in order. */
  readonly enrollments: string[]
}

/** The development EST service on loopback, signing 127.0.0.1 for user "proxy" only. */
async function startEstService (t: Test, directory: string): Promise<EstFixture> {
  const ca = await makeCa(directory, { name: 'EST Issuing CA' })
  const service: FastifyInstance = await buildEstService({
    ca: { cert: ca.cert, key: ca.key },
    allowlist: ['127.0.0.1'],
    users: { proxy: EST_PASSWORD },
    serverName: '127.0.0.1',
    announce: () => {}
  })
  const enrollments: string[] = []
  service.addHook('onResponse', async (request, reply) => {
    if (request.url.endsWith('/simpleenroll')) enrollments.push(`${request.url} ${reply.statusCode}`)
  })
  await service.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => service.close())
  return { ca, url: `https://127.0.0.1:${(service.server.address() as AddressInfo).port}`, enrollments }
}

/** An HTTPS origin on 127.0.0.1 with a certificate of the destination CA; records request headers. */
async function startHttpsOrigin (
  t: Test,
  pki: InterceptionPki
): Promise<{ port: number, seen: Array<Record<string, string | string[] | undefined>>, accepts: AcceptLog }> {
  const seen: Array<Record<string, string | string[] | undefined>> = []
  const origin: Server = createServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key }, (req, res) => {
    seen.push(req.headers)
    res.end('behind EST-issued leaves')
  })
  const accepts = logAccepts(origin, 'requests')
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { origin.closeAllConnections(); origin.close(() => resolve()) }))
  return { port: (origin.address() as AddressInfo).port, seen, accepts }
}

test('server: interception.est from the configuration file: curl trusting only the EST CA gets a leaf the EST service enrolled once, and credentials are injected', async (t) => {
  const directory = fixtureDirectory(t)
  const pki = await makeInterceptionPki(t)
  const est = await startEstService(t, directory)
  const origin = await startHttpsOrigin(t, pki)
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    interception: {
      hosts: ['127.0.0.1'],
      est: { url: est.url, username: 'proxy', password: EST_PASSWORD, ca: est.ca.certPath, timeout: 5000 },
      trustedDestinationCa: pki.destinationCa.certPath
    },
    headers: [{ hosts: ['127.0.0.1'], set: { Authorization: TOKEN } }]
  })
  const proxy = `http://127.0.0.1:${portOf(server.urls[0])}`
  const target = `https://127.0.0.1:${origin.port}/est`

  for (const round of [1, 2]) {
    const { stdout } = await curl('curl', ['-sS', '--proxy', proxy, '--cacert', est.ca.certPath, target])
    t.equal(stdout, 'behind EST-issued leaves', `round ${round}: curl trusting only the EST CA accepted the proxy's leaf`)
  }
  t.same(est.enrollments, ['/.well-known/est/simpleenroll 200'], 'one enrollment: the second tunnel reused the cached leaf')
  t.equal(origin.seen.length, 2)
  t.equal(origin.seen[0]?.authorization, TOKEN, 'the header rule applied inside the tunnel decrypted with the EST leaf')
  t.equal(server.developmentCa, undefined, 'no development CA is made when est is configured')
})

test('server: an EST service refusing the proxy fails the intercepted handshake (no fallback leaf); the log has the EST status, never the password', async (t) => {
  const directory = fixtureDirectory(t)
  const pki = await makeInterceptionPki(t)
  const est = await startEstService(t, directory)
  const origin = await startHttpsOrigin(t, pki)
  const wrongPassword = 'wrong-est-password-91be04'
  const configPath = join(directory, 'proxy.json')
  writeFileSync(configPath, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    interception: {
      hosts: ['127.0.0.1'],
      est: { url: est.url, username: 'proxy', password: wrongPassword, ca: 'EST-Issuing-CA.pem' },
      trustedDestinationCa: pki.destinationCa.certPath
    },
    dataDirectory: join(directory, 'state')
  }))
  const bin = runBin(t, ['--config', configPath])
  const [url] = await listeningUrls(bin)
  t.match(bin.stdout(), `interception: 127.0.0.1 (leaves enrolled from EST ${est.url}/.well-known/est; clients must trust the EST service's CA)`, 'the summary names the EST endpoint')
  t.notMatch(bin.stdout(), /DEVELOPMENT CA/, 'no development CA with est')

  const failed = await curl('curl', ['-sS', '--proxy', url ?? '', '--cacert', est.ca.certPath, `https://127.0.0.1:${origin.port}/`]).then(() => null, (error: { code: number }) => error)
  t.equal(failed?.code, 35, 'curl: the TLS handshake inside the tunnel failed (CURLE_SSL_CONNECT_ERROR)')
  t.same(est.enrollments, ['/.well-known/est/simpleenroll 401'], 'the proxy asked the EST service, which refused it')
  await expectNothingDialedBefore(t, origin.accepts, 'nothing reached the destination')
  await new Promise<void>((resolve) => {
    const check = (): void => { if (bin.stdout().includes('certificate provider failed')) resolve(); else setImmediate(check) }
    check()
  })
  const output = bin.stdout() + bin.stderr()
  t.match(output, /certificate provider failed[^\n]*401|401[^\n]*certificate provider failed/, 'the failure is logged with the EST status')
  t.notMatch(output, wrongPassword, 'the password never appears in the output')
  t.notMatch(output, Buffer.from(`proxy:${wrongPassword}`).toString('base64'), 'nor the Basic credentials')
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0, 'SIGTERM: the EST provider closes with the server and the process exits cleanly')
})

test('server: interception.est settings are checked at start, each refusal naming its key and never the password', async (t) => {
  const directory = fixtureDirectory(t)
  const ca = await makeCa(directory, { name: 'EST Check CA' })
  const other = await makeCa(directory, { name: 'Other CA' })
  const notPem = join(directory, 'not-pem.txt')
  writeFileSync(notPem, 'this is not a certificate\n')
  const base = { url: 'https://127.0.0.1:1', username: 'proxy', password: EST_PASSWORD }
  const start = async (est: object): Promise<unknown> => await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    interception: { hosts: ['127.0.0.1'], est }
  }, directory).then(() => null, (error: unknown) => error)

  const cases: Array<[string, object, RegExp]> = [
    ['a client key that does not match its certificate', { ...base, clientCert: ca.certPath, clientKey: other.keyPath }, /^\/interception\/est: clientCert and clientKey cannot be used together/],
    ['a server CA file without a certificate', { ...base, ca: notPem }, /^\/interception\/est\/ca: ".*not-pem\.txt" must hold PEM certificates/],
    ['a url with a path (the provider\'s own check, reported under the key)', { ...base, url: 'https://127.0.0.1:1/est' }, /^\/interception\/est\/url: must be the server's origin only \(https:\/\/host\[:port\]\); use "label" for a CA label$/],
    ['an unreadable client certificate', { ...base, clientCert: 'missing.pem', clientKey: ca.keyPath }, /^\/interception\/est\/clientCert: cannot read ".*missing\.pem" \(ENOENT\)/]
  ]
  for (const [what, est, message] of cases) {
    const error = await start(est)
    t.match(error, { name: 'ConfigError', message }, what)
    t.notMatch(String((error as Error).message), EST_PASSWORD, `${what}: no password in the message`)
  }
})
