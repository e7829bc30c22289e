import { test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll, type TlsOrigin } from './helpers/intercepting-proxy'
import { basic } from './helpers/raw-client'
import { eventually } from './helpers/eventually'
import { capturedLog, type CapturedLog } from './helpers/captured-log'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'
import type { ForwardProxyOptions } from '../lib/index'

const VALUE = 'sk-live-9e7d5c3a1f2e7f3c9a1e5b2d'
const PLACEHOLDER = 'PLACEHOLDER_API_51c0'

const answerWithAuthorization = (req: IncomingMessage, res: ServerResponse): void => { res.end(`auth=${req.headers.authorization ?? ''}`) }

interface Setup {
  readonly origin: TlsOrigin
  readonly log: CapturedLog
  readonly send: (url: string, headers?: Record<string, string>) => Promise<{ status: number, body: string, proxyStatus: string }>
}

/**
 * An origin on 127.0.0.1 that the secret `api` is granted to, and a proxy whose user `trial`
 * may reach only `listed.test`, with `options` deciding which host list reports.
 */
async function setUp (t: Test, options: (originPort: number) => ForwardProxyOptions): Promise<Setup> {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, answerWithAuthorization)
  const log = capturedLog()
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { secrets: [{ name: 'api', value: VALUE, hosts: [`127.0.0.1:${origin.port}`], placeholder: PLACEHOLDER }], ...options(origin.port) },
    interception: interceptAll(pki),
    server: { logger: log.logger }
  })
  const agent = new ProxyAgent({ uri: proxy.url, token: basic('trial', 'pw'), requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  const send = async (url: string, headers: Record<string, string> = {}): Promise<{ status: number, body: string, proxyStatus: string }> => {
    const response = await request(url, { dispatcher: agent, headers })
    return { status: response.statusCode, body: await response.body.text(), proxyStatus: String(response.headers['proxy-status'] ?? '') }
  }
  return { origin, log, send }
}

/**
 * What report mode must never do with a secret: a placeholder in a request a host list would
 * have refused gets 403 and nothing is sent, even to the secret's own host, while the same
 * request without one is forwarded; a host the secret is not granted to is refused as ever.
 */
async function neverSent (t: Test, setup: Setup, wouldDeny: { readonly reason: string, readonly rule: string }): Promise<void> {
  const { origin, log, send } = setup
  const granted = `https://127.0.0.1:${origin.port}`
  const refused = await send(`${granted}/with-placeholder`, { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(refused.status, 403, 'a placeholder in a request enforcement would refuse is not replaced')
  t.match(refused.proxyStatus, `error=http_request_denied; details="secret not sent: ${wouldDeny.reason} (report mode)"`)
  await expectNothingDialedBefore(t, origin.accepts, 'nothing was sent toward the secret\'s host')

  const forwarded = await send(`${granted}/without`)
  t.equal(forwarded.status, 200, 'the same request without a placeholder is forwarded')
  t.equal(forwarded.body, 'auth=')
  const otherHost = await send(`https://localhost:${origin.port}/elsewhere`, { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(otherHost.status, 403)
  t.match(otherHost.proxyStatus, 'details="secret not allowed for this destination"', 'a host the secret is not granted to is refused as without report mode')
  t.same(origin.requests.map((seen) => seen.url), ['/without'], 'the origin saw only the request without a placeholder')

  await eventually(() => log.access().filter((entry) => entry.kind === 'intercepted').length === 3)
  const [placeholder, plain, elsewhere] = log.access().filter((entry) => entry.kind === 'intercepted')
  t.match(placeholder, { status: 403, decision: 'deny', reason: `secret not sent: ${wouldDeny.reason} (report mode)`, rule: wouldDeny.rule, secrets: ['api'] })
  t.match(plain, { status: 200, decision: 'would-deny', reason: wouldDeny.reason, rule: wouldDeny.rule, address: `127.0.0.1:${origin.port}` })
  t.match(elsewhere, { status: 403, decision: 'deny', reason: 'secret not allowed for this destination', rule: 'secrets.api.hosts' })
  t.notOk(JSON.stringify(log.lines()).includes(VALUE), 'the value is in no log line')
}

test('Report mode never puts a secret in a request a user\'s allowedHosts would refuse: the placeholder gets 403 with nothing sent, even to the secret\'s host; without one the request is forwarded as would-deny', async (t) => {
  const setup = await setUp(t, () => ({ auth: { users: { trial: { password: 'pw', allowedHosts: ['listed.test'], mode: 'report' } } } }))
  await neverSent(t, setup, { reason: 'host not allowed for this user', rule: 'users.trial.allowedHosts' })
})

test('Report mode never puts a secret in a request destinations.allowedHosts would refuse: the placeholder gets 403 with nothing sent, even to the secret\'s host; without one the request is forwarded as would-deny', async (t) => {
  const setup = await setUp(t, () => ({
    auth: { users: { trial: 'pw' } },
    destinations: { mode: 'report', allowedHosts: ['listed.test'], allowPrivateNetworks: true, allowedPorts: '*' }
  }))
  await neverSent(t, setup, { reason: 'host not allowed', rule: 'destinations.allowedHosts' })
})
