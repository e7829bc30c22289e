import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { once, readAll, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { capturedLog } from './helpers/captured-log'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'
import { startWebSocketOrigin, textFrame } from './helpers/websocket-origin'
import { randomBytes } from 'node:crypto'

test('Access log: one structured line per http:// request: kind forward, user, client address, destination, method, status, bytes both ways and duration', async (t) => {
  const log = capturedLog()
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } }, undefined, { logger: log.logger })
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false, token: basic('alice', 's3cret') })
  t.teardown(() => agent.close())
  const response = await request(`http://127.0.0.1:${origin.port}/upload`, { dispatcher: agent, method: 'POST', body: 'twelve bytes' })
  const body = await response.body.text()
  t.equal(response.statusCode, 200)
  await eventually(() => log.access().length === 1)
  const [entry] = log.access()
  t.match(entry, {
    kind: 'forward',
    user: 'alice',
    client: '127.0.0.1',
    method: 'POST',
    destination: `127.0.0.1:${origin.port}`,
    status: 200,
    errorType: null,
    bytesIn: 12,
    bytesOut: Buffer.byteLength(body)
  })
  t.type(entry?.durationMs, 'number')
})

test('Access log: an opaque tunnel logs one line when it closes (kind tunnel, tunnel opaque, bytes each way, close reason); a refused CONNECT and a failed one log their status and Proxy-Status error type', async (t) => {
  const log = capturedLog()
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t, { destinations: { allowedPorts: '*', allowPrivateNetworks: true, deniedHosts: ['denied.example'] } }, undefined, { logger: log.logger })
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  tunnel.socket.write('abc')
  upstream.once('data', () => upstream.end('defgh'))
  t.equal(await readAll(tunnel.socket), 'defgh')
  tunnel.socket.end()
  await once(tunnel.socket, 'close')
  const refused = await openTunnel(proxy.port, 'denied.example:443')
  t.equal(refused.status, 403)
  refused.socket.destroy()
  const failed = await rawExchange(proxy.port, 'GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\nConnection: close\r\n\r\n')
  t.equal(failed.status, 502)
  await eventually(() => log.access().length === 3)

  const entries = log.access()
  t.match(entries.find((entry) => entry.kind === 'tunnel'), {
    tunnel: 'opaque', user: null, client: '127.0.0.1', method: 'CONNECT', destination: `127.0.0.1:${destination.port}`, status: 200, closeReason: 'closed', bytesIn: 3, bytesOut: 5
  })
  t.match(entries.find((entry) => entry.kind === 'connect'), { destination: 'denied.example:443', status: 403, errorType: 'http_request_denied', bytesIn: 0, bytesOut: 0 })
  t.match(entries.find((entry) => entry.kind === 'forward'), { destination: '127.0.0.1:1', status: 502, errorType: 'connection_refused' })
})

test('Access log: a request inside an intercepted tunnel logs kind intercepted with the tunnel\'s user and client address, and the tunnel its own line (tunnel intercepted)', async (t) => {
  const log = capturedLog()
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { auth: { users: { bob: 'pw' } } },
    interception: interceptAll(pki),
    server: { logger: log.logger }
  })
  const agent = new ProxyAgent({ uri: proxy.url, token: basic('bob', 'pw'), requestTls: { ca: pki.operatorCa.cert } })
  const response = await request(`https://127.0.0.1:${origin.port}/inside`, { dispatcher: agent })
  const body = await response.body.text()
  await agent.close()
  await eventually(() => log.access().length === 2)
  const entries = log.access()
  t.match(entries.find((entry) => entry.kind === 'intercepted'), {
    user: 'bob', client: '127.0.0.1', method: 'GET', destination: `127.0.0.1:${origin.port}`, status: 200, errorType: null, bytesIn: 0, bytesOut: Buffer.byteLength(body)
  })
  t.match(entries.find((entry) => entry.kind === 'tunnel'), { tunnel: 'intercepted', user: 'bob', client: '127.0.0.1', status: 200 })
})

test('Access log: a WebSocket upgrade inside an intercepted tunnel logs one line when the relay closes: kind intercepted, status 101, bytes each way, close reason', async (t) => {
  const log = capturedLog()
  const pki = await makeInterceptionPki(t)
  const origin = await startWebSocketOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, {
    interception: interceptAll(pki),
    server: { logger: log.logger }
  })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const key = randomBytes(16).toString('base64')
  socket.write(['GET /chat HTTP/1.1', `Host: ${target}`, 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${key}`].join('\r\n') + '\r\n\r\n')
  let received = Buffer.alloc(0)
  socket.on('data', (chunk: Buffer) => { received = Buffer.concat([received, chunk]) })
  await eventually(() => received.includes('\r\n\r\n'))
  t.match(received.toString('latin1'), /^HTTP\/1\.1 101 /)
  t.equal(log.access().length, 0, 'nothing logged while the relay is open')
  const frame = textFrame('hello', true)
  socket.write(frame)
  socket.end()
  await once(socket, 'close')
  await eventually(() => log.access().some((entry) => entry.kind === 'intercepted'))
  const line = log.access().find((entry) => entry.kind === 'intercepted')
  t.match(line, { method: 'GET', destination: target, status: 101, errorType: null, closeReason: 'closed', bytesIn: frame.length })
  t.ok(typeof line?.bytesOut === 'number' && line.bytesOut > 0, 'the origin\'s frames counted')
})
