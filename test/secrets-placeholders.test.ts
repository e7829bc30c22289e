import { test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, staticProvider, type InterceptingProxy, type TlsOrigin } from './helpers/intercepting-proxy'
import { http2OverTls, http2Request, openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { basic, rawExchange } from './helpers/raw-client'
import { startOrigin } from './helpers/servers'
import { capturedLog, type CapturedLog } from './helpers/captured-log'
import type { ForwardProxyOptions, ForwardProxySecret } from '../lib/index'
import { randomBytes } from 'node:crypto'
import { startWebSocketOrigin } from './helpers/websocket-origin'
import { installMetrics } from './helpers/metric-reader'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

// Long and distinctive, so a search of any output for it cannot match by chance; '/', '+' and
// '=' show how it is encoded in a path.
const VALUE = 'sk-live/7f3c+9a1e=5b2d4c6f8a0b9e7d5c3a1f2e'
const PLACEHOLDER = 'PLACEHOLDER_API_7a41c2'
const ENCODED_VALUE = 'sk-live%2F7f3c%2B9a1e%3D5b2d4c6f8a0b9e7d5c3a1f2e'

const answerOk = (_req: IncomingMessage, res: ServerResponse): void => { res.end('ok') }

interface Setup {
  pki: InterceptionPki
  origin: TlsOrigin
  proxy: InterceptingProxy
  log: CapturedLog
}

/**
 * An origin on 127.0.0.1 (answering "ok" unless `handler` answers) and a proxy whose one
 * secret is granted to 127.0.0.1. The selector intercepts `localhost` only: 127.0.0.1 is
 * intercepted because the secret is granted to it.
 */
async function setUp (
  t: Test,
  options: { handler?: (req: IncomingMessage, res: ServerResponse) => void, proxy?: ForwardProxyOptions, secret?: Partial<ForwardProxySecret> } = {}
): Promise<Setup> {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki, options.handler ?? answerOk)
  const log = capturedLog()
  const proxy = await startInterceptingProxy(t, pki, {
    server: { logger: log.logger },
    proxy: { secrets: [{ name: 'api', value: VALUE, hosts: [`127.0.0.1:${origin.port}`], placeholder: PLACEHOLDER, ...options.secret }], ...options.proxy },
    interception: { certificateProvider: staticProvider(pki), selector: { shouldIntercept: (_request, destination) => destination.host === 'localhost' } }
  })
  return { pki, origin, proxy, log }
}

function agentFor (t: Test, setup: Setup): ProxyAgent {
  const agent = new ProxyAgent({ uri: setup.proxy.url, requestTls: { ca: setup.pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  return agent
}

async function get (agent: ProxyAgent, url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number, headers: Record<string, string | string[] | undefined>, body: string }> {
  const response = await request(url, { dispatcher: agent, headers, method })
  return { status: response.statusCode, headers: response.headers, body: await response.body.text() }
}

test('Secrets 3: placeholders in header values, inside a Basic Authorization and in the path and query (percent-encoded or not) reach a granted host as the value (undici, HTTP/1.1 inside the tunnel); the host is intercepted though the selector said no', async (t) => {
  const setup = await setUp(t)
  const agent = agentFor(t, setup)
  const base = `https://127.0.0.1:${setup.origin.port}`

  t.equal((await get(agent, `${base}/v1/me`, { authorization: `Bearer ${PLACEHOLDER}`, 'x-api-key': `${PLACEHOLDER},${PLACEHOLDER}` })).status, 200)
  t.equal((await get(agent, `${base}/basic`, { authorization: `Basic ${Buffer.from(`user:${PLACEHOLDER}`).toString('base64')}` })).status, 200)
  t.equal((await get(agent, `${base}/keys/${PLACEHOLDER}?key=${PLACEHOLDER}&other=1`)).status, 200)
  // The placeholder spelled with percent-escapes in mixed case: still a placeholder.
  const oddlyEncoded = '%50LACEHOLDER%5fAPI_7a41%632'
  t.equal((await get(agent, `${base}/odd?k=${oddlyEncoded}&z=%2F`)).status, 200)

  const [bearer, basicAuth, inPath, odd] = setup.origin.requests
  t.equal(bearer?.headers.authorization, `Bearer ${VALUE}`)
  t.equal(bearer?.headers['x-api-key'], `${VALUE},${VALUE}`, 'every occurrence is replaced')
  t.equal(basicAuth?.headers.authorization, `Basic ${Buffer.from(`user:${VALUE}`).toString('base64')}`, 'the password inside Basic credentials is replaced and re-encoded')
  t.equal(inPath?.url, `/keys/${ENCODED_VALUE}?key=${ENCODED_VALUE}&other=1`, 'in the path the value is percent-encoded: it cannot end a segment or add a parameter')
  t.equal(odd?.url, `/odd?k=${ENCODED_VALUE}&z=%2F`, 'the rest of the target is kept byte for byte')
  const entries = setup.log.access().filter((entry) => entry.kind === 'intercepted')
  t.same(entries.map((entry) => entry.secrets), [['api'], ['api'], ['api'], ['api']], 'the access log names the secret')
  t.notOk(JSON.stringify(setup.log.access()).includes(VALUE), 'and never its value')
})

test('Secrets 3: HTTP/2 inside the tunnel: a placeholder in a header value and in :path is replaced', async (t) => {
  const setup = await setUp(t)
  const target = `127.0.0.1:${setup.origin.port}`
  const socket = await openInterceptedTls(t, setup.proxy.port, target, { ca: setup.pki.operatorCa.cert, alpn: ['h2'] })
  const session = await http2OverTls(t, socket, target)
  const response = await http2Request(session, { ':path': `/h2?token=${PLACEHOLDER}`, ':authority': target, 'x-token': PLACEHOLDER })
  t.equal(response.status, 200)
  t.equal(setup.origin.requests[0]?.headers['x-token'], VALUE)
  t.equal(setup.origin.requests[0]?.url, `/h2?token=${ENCODED_VALUE}`)
})

test('Secrets 4: a placeholder toward a host the secret is not granted, or from a user whose secrets do not list it, gets 403 http_request_denied; nothing reaches the destination; the access log names the secret', async (t) => {
  const setup = await setUp(t, {
    proxy: {
      auth: { validate: (name, password) => password === 'pw' && (name === 'limited' ? { name, secrets: [] } : { name }) }
    }
  })
  // localhost is the same origin under a name the secret is not granted to.
  const other = `localhost:${setup.origin.port}`
  const full = { 'Proxy-Authorization': basic('full', 'pw') }
  const socket = await openInterceptedTls(t, setup.proxy.port, other, { ca: setup.pki.operatorCa.cert }, full)
  const refused = await rawTlsExchange(socket, `GET /steal HTTP/1.1\r\nHost: ${other}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`)
  t.equal(refused.status, 403)
  t.match(refused.head, /proxy-status: fastify-forward-proxy; error=http_request_denied; details="secret not allowed for this destination"/i)

  const granted = `127.0.0.1:${setup.origin.port}`
  const limited = await openInterceptedTls(t, setup.proxy.port, granted, { ca: setup.pki.operatorCa.cert }, { 'Proxy-Authorization': basic('limited', 'pw') })
  const notForUser = await rawTlsExchange(limited, `GET /mine HTTP/1.1\r\nHost: ${granted}\r\nX-Key: ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`)
  t.equal(notForUser.status, 403, 'a user whose secrets do not list it cannot use it, even toward its host')
  t.match(notForUser.head, /details="secret not granted to this user"/)

  const allowed = await openInterceptedTls(t, setup.proxy.port, granted, { ca: setup.pki.operatorCa.cert }, full)
  t.equal((await rawTlsExchange(allowed, `GET /mine HTTP/1.1\r\nHost: ${granted}\r\nX-Key: ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`)).status, 200, 'a user without a secrets list may use every secret')
  t.same(setup.origin.requests.map((seen) => seen.url), ['/mine'], 'only the allowed request reached the destination')

  const refusals = setup.log.access().filter((entry) => entry.status === 403)
  t.same(refusals.map((entry) => [entry.user, entry.secrets, entry.errorType]), [['full', ['api'], 'http_request_denied'], ['limited', ['api'], 'http_request_denied']])
  t.notOk(JSON.stringify(setup.log.access()).includes(VALUE) || refused.body.includes(VALUE) || notForUser.body.includes(VALUE))
})

test('Secrets 3/4: over plain http:// a placeholder is never replaced: 403, with "credentials are not sent over plain http" toward a granted host; nothing is sent', async (t) => {
  const plain = await startOrigin(t)
  const setup = await setUp(t, { secret: { hosts: [`127.0.0.1:${plain.port}`] } })
  const toGranted = await rawExchange(setup.proxy.port, `GET http://127.0.0.1:${plain.port}/p?k=${PLACEHOLDER} HTTP/1.1\r\nHost: 127.0.0.1:${plain.port}\r\nConnection: close\r\n\r\n`)
  t.equal(toGranted.status, 403)
  t.match(toGranted.text, /details="credentials are not sent over plain http"/)
  const toOther = await rawExchange(setup.proxy.port, `GET http://localhost:${plain.port}/p HTTP/1.1\r\nHost: localhost:${plain.port}\r\nAuthorization: Bearer ${PLACEHOLDER}\r\nConnection: close\r\n\r\n`)
  t.equal(toOther.status, 403)
  t.match(toOther.text, /details="secret not allowed for this destination"/)
  await expectNothingDialedBefore(t, plain.accepts, 'nothing reached the destination')
})

test('Secrets 4: a placeholder in a header name, in the Host of an intercepted request, or in a TRACE is never replaced and nothing is sent', async (t) => {
  const setup = await setUp(t)
  const target = `127.0.0.1:${setup.origin.port}`
  const exchange = async (head: string): Promise<{ status: number, head: string }> => {
    const socket = await openInterceptedTls(t, setup.proxy.port, target, { ca: setup.pki.operatorCa.cert })
    return await rawTlsExchange(socket, `${head}Connection: close\r\n\r\n`)
  }
  const inName = await exchange(`GET /n HTTP/1.1\r\nHost: ${target}\r\nX-${PLACEHOLDER}: 1\r\n`)
  t.equal(inName.status, 403)
  t.match(inName.head, /details="secret not allowed for this destination"/)
  const inHost = await exchange(`GET /h HTTP/1.1\r\nHost: ${PLACEHOLDER}\r\n`)
  t.equal(inHost.status, 421, 'a Host naming another authority is misdirected before anything else')
  const trace = await exchange(`TRACE /t HTTP/1.1\r\nHost: ${target}\r\nX-Key: ${PLACEHOLDER}\r\n`)
  t.equal(trace.status, 403, 'a TRACE would echo the value back')
  t.match(trace.head, /details="secrets are not sent in a TRACE"/)
  await expectNothingDialedBefore(t, setup.origin.accepts, 'nothing was sent')
})

test('Secrets: a placeholder split across two header lines, in another case or cut short is not a placeholder: sent as is', async (t) => {
  const setup = await setUp(t)
  const target = `127.0.0.1:${setup.origin.port}`
  const socket = await openInterceptedTls(t, setup.proxy.port, target, { ca: setup.pki.operatorCa.cert })
  const half = PLACEHOLDER.length / 2
  const response = await rawTlsExchange(socket, `GET /split HTTP/1.1\r\nHost: ${target}\r\nX-Split: ${PLACEHOLDER.slice(0, half)}\r\nX-Split: ${PLACEHOLDER.slice(half)}\r\nX-Lower: ${PLACEHOLDER.toLowerCase()}\r\nX-Short: ${PLACEHOLDER.slice(0, -1)}\r\nConnection: close\r\n\r\n`)
  t.equal(response.status, 200)
  const seen = setup.origin.requests[0]?.headers
  t.equal(seen?.['x-split'], `${PLACEHOLDER.slice(0, half)}, ${PLACEHOLDER.slice(half)}`)
  t.equal(seen?.['x-lower'], PLACEHOLDER.toLowerCase())
  t.equal(seen?.['x-short'], PLACEHOLDER.slice(0, -1))
  t.notOk(JSON.stringify(setup.origin.requests).includes(VALUE))
})

test('Secrets 5: a value the destination echoes in response headers, as is or percent-encoded, reaches the client as the placeholder', async (t) => {
  const setup = await setUp(t, {
    handler (req, res) {
      res.setHeader('x-echo', String(req.headers.authorization))
      res.setHeader('location', `https://127.0.0.1/callback?token=${ENCODED_VALUE}`)
      res.setHeader('set-cookie', [`a=${VALUE}`, 'b=1'])
      res.end('ok')
    }
  })
  const agent = agentFor(t, setup)
  const response = await get(agent, `https://127.0.0.1:${setup.origin.port}/echo`, { authorization: `Bearer ${PLACEHOLDER}` })
  t.equal(setup.origin.requests[0]?.headers.authorization, `Bearer ${VALUE}`, 'the destination got the value')
  t.equal(response.headers['x-echo'], `Bearer ${PLACEHOLDER}`)
  t.equal(response.headers.location, `https://127.0.0.1/callback?token=${PLACEHOLDER}`)
  t.same(response.headers['set-cookie'], [`a=${PLACEHOLDER}`, 'b=1'])
  t.notOk(JSON.stringify(response.headers).includes(VALUE) || JSON.stringify(response.headers).includes(ENCODED_VALUE))
})

test('Secrets: the default placeholder is ffp_placeholder_<name>_ and 16 hex digits of the name\'s SHA-256, and works like a chosen one', async (t) => {
  const setup = await setUp(t, { secret: { placeholder: undefined } })
  const { createHash } = await import('node:crypto')
  const placeholder = `ffp_placeholder_api_${createHash('sha256').update('api').digest('hex').slice(0, 16)}`
  const agent = agentFor(t, setup)
  t.equal((await get(agent, `https://127.0.0.1:${setup.origin.port}/d`, { authorization: `Bearer ${placeholder}` })).status, 200)
  t.equal(setup.origin.requests[0]?.headers.authorization, `Bearer ${VALUE}`)
})

test('Secrets 3: a WebSocket upgrade inside the tunnel gets its placeholders replaced in the target and the head like any request', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startWebSocketOrigin(t, pki, 0)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { secrets: [{ name: 'api', value: VALUE, hosts: [`127.0.0.1:${origin.port}`], placeholder: PLACEHOLDER }] },
    interception: { certificateProvider: staticProvider(pki) }
  })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const key = randomBytes(16).toString('base64')
  const answered = new Promise<string>((resolve) => {
    let text = ''
    socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1'); if (text.includes('\r\n\r\n')) resolve(text) })
  })
  socket.write([`GET /ws?token=${PLACEHOLDER} HTTP/1.1`, `Host: ${target}`, 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${key}`, `Authorization: Bearer ${PLACEHOLDER}`].join('\r\n') + '\r\n\r\n')
  t.match(await answered, /^HTTP\/1\.1 101 /)
  t.equal(origin.upgrades[0]?.url, `/ws?token=${ENCODED_VALUE}`)
  t.equal(origin.upgrades[0]?.headers.authorization, `Bearer ${VALUE}`)
})

test('Secrets: the value is in no metric: every instrument after granted, refused and echoed requests', async (t) => {
  const installed = installMetrics(t)
  const setup = await setUp(t, { handler (req, res) { res.setHeader('x-echo', String(req.headers.authorization)); res.end('ok') } })
  const agent = agentFor(t, setup)
  const base = `https://127.0.0.1:${setup.origin.port}`
  t.equal((await get(agent, `${base}/m?k=${PLACEHOLDER}`, { authorization: `Bearer ${PLACEHOLDER}` })).status, 200)
  t.equal((await get(agent, `https://localhost:${setup.origin.port}/m`, { authorization: `Bearer ${PLACEHOLDER}` })).status, 403, 'refused toward a host not granted')
  const dump = await installed.dump()
  t.match(dump, /forward_proxy/, 'the instruments were collected')
  t.notOk(dump.includes(VALUE) || dump.includes(ENCODED_VALUE) || dump.includes(PLACEHOLDER), 'neither value nor placeholder in any metric')
})
