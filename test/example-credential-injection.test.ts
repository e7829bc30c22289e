import { randomBytes } from 'node:crypto'
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net'
import { test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki, type InterceptionPki } from './helpers/interception-pki'
import { basic } from './helpers/raw-client'
import { runExample } from './helpers/example-process'
import { credentialInjectionEnv } from './helpers/credential-injection-example'

/** What the API origin saw of one request. */
interface ApiRequest {
  scheme: 'https' | 'http'
  url: string
  authorization: string | undefined
}

/**
 * The API: one port on 127.0.0.1 that speaks HTTPS (destination CA leaf) and, for a client
 * that does not start with a TLS record, plain HTTP, so that an http:// request to the very
 * same host and port can show that the secret never travels in clear text. It records the
 * Authorization it received and never echoes it.
 */
async function startApi (t: Test, pki: InterceptionPki): Promise<{ port: number, requests: ApiRequest[] }> {
  const requests: ApiRequest[] = []
  const handler = (scheme: ApiRequest['scheme']) => (req: IncomingMessage, res: ServerResponse) => {
    requests.push({ scheme, url: req.url ?? '', authorization: req.headers.authorization })
    req.resume()
    req.on('end', () => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ path: req.url, authorized: req.headers.authorization !== undefined }))
    })
  }
  const https = createHttpsServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key }, handler('https'))
  const http = createHttpServer(handler('http'))
  https.on('tlsClientError', () => {})
  const sockets = new Set<Socket>()
  const front = createNetServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    socket.once('readable', () => {
      const first = socket.read(1) as Buffer | null
      if (first === null) return
      socket.unshift(first)
      // 0x16: a TLS handshake record.
      ;(first[0] === 0x16 ? https : http).emit('connection', socket)
    })
  })
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const socket of sockets) socket.destroy()
    front.close(() => resolve())
  }))
  return { port: (front.address() as AddressInfo).port, requests }
}

/** Everything a client got back: status, raw header lines and body. */
async function fetchThrough (agent: ProxyAgent, url: string, headers: Record<string, string> = {}): Promise<{ status: number, seen: string }> {
  const response = await request(url, { dispatcher: agent, headers })
  const body = await response.body.text()
  return { status: response.statusCode, seen: `${JSON.stringify(response.headers)}\n${body}` }
}

test('examples/credential-injection.ts: run for real, it injects alice\'s API secret into her requests inside her intercepted tunnel only; bob\'s tunnel stays opaque, alice\'s http:// request gets nothing, and the secret is in no response and no log line', { timeout: 30_000 }, async (t) => {
  const pki = await makeInterceptionPki(t)
  const api = await startApi(t, pki)
  const secret = `sk-${randomBytes(16).toString('hex')}`
  const example = await runExample(t, 'credential-injection.ts', {
    PROXY_HOST: '127.0.0.1',
    ...credentialInjectionEnv(pki, api.port, { alicePassword: 'alice-password', bobPassword: 'bob-password', aliceApiToken: secret })
  })
  const proxyUrl = `http://127.0.0.1:${example.port}`

  // Alice trusts the operator CA only: her tunnel to the API is intercepted.
  const alice = new ProxyAgent({ uri: proxyUrl, token: basic('alice', 'alice-password'), requestTls: { ca: pki.operatorCa.cert } })
  // Bob trusts the API's own CA only: his tunnel must reach the API untouched.
  const bob = new ProxyAgent({ uri: proxyUrl, token: basic('bob', 'bob-password'), requestTls: { ca: pki.destinationCa.cert } })
  // Alice again, sending http:// to the same host and port (absolute-form, no tunnel).
  const alicePlain = new ProxyAgent({ uri: proxyUrl, token: basic('alice', 'alice-password'), proxyTunnel: false })
  t.teardown(() => Promise.all([alice.close(), bob.close(), alicePlain.close()]))

  const responses = [
    await fetchThrough(alice, `https://127.0.0.1:${api.port}/alice`, { authorization: 'Bearer chosen-by-the-client' }),
    await fetchThrough(bob, `https://127.0.0.1:${api.port}/bob`),
    await fetchThrough(alicePlain, `http://127.0.0.1:${api.port}/alice-plain`)
  ]
  t.same(responses.map((response) => response.status), [200, 200, 200])

  t.same(api.requests, [
    { scheme: 'https', url: '/alice', authorization: `Bearer ${secret}` },
    { scheme: 'https', url: '/bob', authorization: undefined },
    { scheme: 'http', url: '/alice-plain', authorization: undefined }
  ], 'the secret reached the API only in alice\'s intercepted request, replacing what her client sent')
  for (const [index, response] of responses.entries()) {
    t.notOk(response.seen.includes(secret), `response ${index + 1} holds no trace of the secret`)
  }
  await example.outputMatching(/API request with an injected credential/)
  const logs = example.output()
  t.match(logs, /"user":"alice".*"msg":"API request with an injected credential"/, 'the app hook logged alice\'s intercepted request')
  t.equal(logs.match(/API request with an injected credential/g)?.length, 1, 'and only that one')
  t.notOk(logs.includes(secret), 'no log line holds the secret')
  t.notOk(logs.includes(secret.slice(3)), 'not even in part')
})
