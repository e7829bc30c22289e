import { test, type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { connect as tlsConnect } from 'node:tls'
import { createHeaderRulesTransform, type TlsInterceptionOptions, type ForwardProxyOptions } from '../lib/index'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { interceptAll, startInterceptingProxy, startTlsOrigin, type TlsOrigin } from './helpers/intercepting-proxy'
import { installMetrics } from './helpers/metric-reader'
import { openTunnel } from './helpers/raw-client'

/*
 * passthroughOnClientRefusal with a real client that does not trust the operator CA: curl,
 * trusting only the origin's own CA, fails against the proxy's leaf with a TLS alert
 * (unknown_ca); after `after` such refusals in a row by one user for one host, that user's
 * tunnels to it are relayed opaquely, and curl sees the origin's own certificate.
 */

const USERS = { alice: 'alice-password', bob: 'bob-password' }

interface CurlOutcome {
  /** curl's exit code: 0 answered, 60 the certificate was not trusted (the proxy's leaf). */
  readonly exit: number
  readonly body: string
}

/** `curl https://127.0.0.1:PORT/` through the proxy as `user`, trusting the origin's CA only. */
function curlThrough (proxyPort: number, user: keyof typeof USERS, caFile: string, originPort: number): Promise<CurlOutcome> {
  return new Promise((resolve) => {
    execFile('curl', ['-sS', '--max-time', '10', '--proxy', `http://127.0.0.1:${proxyPort}`, '--proxy-user', `${user}:${USERS[user]}`, '--cacert', caFile, `https://127.0.0.1:${originPort}/`], (error, stdout) => {
      const exit = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
      resolve({ exit, body: stdout })
    })
  })
}

/** Warn lines the proxy logged, parsed. */
function warnLines (): { lines: Array<Record<string, unknown>>, stream: Writable } {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>)
      callback()
    }
  })
  return { lines, stream }
}

async function setUp (t: Test, interception: TlsInterceptionOptions, proxy: (originPort: number) => Partial<ForwardProxyOptions> = () => ({})): Promise<{
  pki: InterceptionPki
  origin: TlsOrigin
  port: number
  caFile: string
  lines: Array<Record<string, unknown>>
  app: FastifyInstance
}> {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const directory = mkdtempSync(join(tmpdir(), 'ffp-refusal-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  const caFile = join(directory, 'origin-ca.pem')
  writeFileSync(caFile, pki.destinationCa.cert)
  const { lines, stream } = warnLines()
  const { port, app } = await startInterceptingProxy(t, pki, {
    server: { logger: { level: 'warn', stream } },
    proxy: { auth: { users: USERS }, ...proxy(origin.port) },
    interception: { ...interceptAll(pki), ...interception }
  })
  return { pki, origin, port, caFile, lines, app }
}

const passthroughLines = (lines: Array<Record<string, unknown>>): Array<Record<string, unknown>> =>
  lines.filter((line) => String(line.msg).startsWith('clients keep refusing the proxy\'s certificate'))

test('passthroughOnClientRefusal: after 2 refusals (TLS alerts from curl) the user\'s tunnels to the host are relayed opaquely, and curl sees the origin\'s own certificate; another user stays intercepted; one warn line, one count, one passthrough entry in the capture', async (t) => {
  const installed = installMetrics(t)
  const { origin, port, caFile, lines, app } = await setUp(t, { passthroughOnClientRefusal: { after: 2, for: 60_000 } }, () => ({ capture: {} }))
  const captured = app.forwardProxy.captures()
  const first = await curlThrough(port, 'alice', caFile, origin.port)
  t.equal(first.exit, 60, 'the first: the proxy\'s leaf, refused by curl')
  t.equal((await curlThrough(port, 'alice', caFile, origin.port)).exit, 60, 'the second too')
  t.equal(origin.requests.length, 0, 'nothing reached the origin')
  const third = await curlThrough(port, 'alice', caFile, origin.port)
  t.equal(third.exit, 0, 'the third is relayed opaquely: the origin\'s own certificate, which curl trusts')
  t.match(JSON.parse(third.body), { method: 'GET', url: '/' }, 'answered by the origin')
  t.equal(origin.requests.length, 1)
  t.equal((await curlThrough(port, 'bob', caFile, origin.port)).exit, 60, 'another user\'s tunnel to the host is still intercepted')
  const started = passthroughLines(lines)
  t.equal(started.length, 1, 'one line when the passthrough started')
  t.match(started[0], { level: 40, tunnel: { destination: `127.0.0.1:${origin.port}`, user: 'alice' } })
  t.same(await installed.sums('forward_proxy.interception.passthroughs'), { '{}': 1 }, 'counted once')
  const { value: entry } = await captured.next()
  t.match(entry, { request: { method: 'CONNECT', url: `https://127.0.0.1:${origin.port}/` }, _tunnel: 'passthrough', _user: 'alice', _intercepted: false }, 'the relayed tunnel is the first entry: the refused handshakes carried no request')
  t.ok((entry?._bytesUp ?? 0) > 0 && (entry?._bytesDown ?? 0) > 0, 'with its byte counts')
})

test('passthroughOnClientRefusal: only a TLS alert refusing the certificate counts, not a client that closes or does not speak TLS', async (t) => {
  const { origin, port, caFile, pki } = await setUp(t, { passthroughOnClientRefusal: { after: 1, for: 60_000 } })
  const authorization = `Basic ${Buffer.from(`alice:${USERS.alice}`).toString('base64')}`
  const tunnelTo = async (): Promise<Awaited<ReturnType<typeof openTunnel>>> => {
    const tunnel = await openTunnel(port, `127.0.0.1:${origin.port}`, { 'proxy-authorization': authorization })
    t.equal(tunnel.status, 200)
    return tunnel
  }
  // A TLS client that drops the connection once it has the proxy's leaf, as a Go client drops a spare one.
  const dropped = await tunnelTo()
  await new Promise<void>((resolve) => {
    const tls = tlsConnect({ socket: dropped.socket, servername: 'localhost', ca: pki.operatorCa.cert })
    tls.once('secureConnect', () => { tls.destroy(); resolve() })
    tls.once('error', () => { tls.destroy(); resolve() })
  })
  // A client that speaks plain HTTP inside: the handshake fails on the proxy's side, with no alert from the client.
  const plain = await tunnelTo()
  plain.socket.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  await new Promise<void>((resolve) => plain.socket.once('close', () => resolve()).resume())
  t.equal((await curlThrough(port, 'alice', caFile, origin.port)).exit, 60, 'still intercepted: neither counted (with after: 1, one would have started the passthrough)')
  t.equal((await curlThrough(port, 'alice', caFile, origin.port)).exit, 0, 'and curl\'s alert does: the next is relayed opaquely')
})

const KEPT: Array<{ what: string, reason: string, proxy: (originPort: number) => Partial<ForwardProxyOptions> }> = [
  {
    what: 'a host some secret is granted to',
    reason: 'a secret is granted to it',
    proxy: (originPort) => ({ secrets: [{ name: 'token', value: 'secret-token-value-1', hosts: [`127.0.0.1:${originPort}`] }] })
  },
  {
    what: 'a host a header rule names',
    reason: 'a header rule names it',
    proxy: () => ({ transforms: [createHeaderRulesTransform([{ hosts: ['127.0.0.1'], set: { 'x-team': 'build' } }])] })
  }
]

for (const { what, reason, proxy } of KEPT) {
  test(`passthroughOnClientRefusal: ${what} stays intercepted, and the refusals are logged with the reason`, async (t) => {
    const { origin, port, caFile, lines } = await setUp(t, { passthroughOnClientRefusal: { after: 2, for: 60_000 } }, proxy)
    for (let i = 0; i < 3; i++) t.equal((await curlThrough(port, 'alice', caFile, origin.port)).exit, 60, `refusal ${i + 1}: still intercepted`)
    const kept = passthroughLines(lines)
    t.equal(kept.length, 1, 'one line after two refusals in a row')
    t.match(kept[0], { reason, tunnel: { user: 'alice' } })
    t.equal(origin.requests.length, 0)
  })
}
