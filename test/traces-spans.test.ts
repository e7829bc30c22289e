import { test } from 'tap'
import Fastify from 'fastify'
import { forwardProxy } from '../lib/index'
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { ProxyAgent, request } from 'undici'
import { installTracing } from './helpers/span-exporter'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { once, readAll, startTcpDestination } from './helpers/tcp-destination'
import { eventually } from './helpers/eventually'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'
import { startWebSocketOrigin } from './helpers/websocket-origin'
import { randomBytes } from 'node:crypto'

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c'
const CLIENT_SPAN = 'b7ad6b7169203331'
const CLIENT_TRACEPARENT = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`

test('Traces: an http:// request gets a CLIENT span joining the client\'s trace, and the destination receives traceparent naming that span (W3C trace context propagated)', async (t) => {
  const tracing = installTracing(t)
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const response = await request(`http://127.0.0.1:${origin.port}/traced?q=1`, {
    dispatcher: new ProxyAgent({ uri: proxy.url, proxyTunnel: false }),
    headers: { traceparent: CLIENT_TRACEPARENT, tracestate: 'vendor=abc' }
  })
  t.equal(response.statusCode, 200)
  await response.body.dump()
  await eventually(() => tracing.spans().length === 1)

  const [span] = tracing.spans()
  t.equal(span?.name, 'GET')
  t.equal(span?.kind, SpanKind.CLIENT)
  t.equal(span?.spanContext().traceId, CLIENT_TRACE, 'the span joins the client\'s trace')
  t.equal(span?.parentSpanContext?.spanId, CLIENT_SPAN, 'as a child of the client\'s span')
  t.match(span?.attributes, {
    'http.request.method': 'GET',
    'server.address': '127.0.0.1',
    'server.port': origin.port,
    'url.scheme': 'http',
    'forward_proxy.kind': 'forward',
    'client.address': '127.0.0.1',
    'http.response.status_code': 200
  })
  t.equal(span?.status.code, SpanStatusCode.UNSET)
  const sent = origin.requests[0]?.headers
  t.equal(sent?.traceparent, `00-${CLIENT_TRACE}-${span?.spanContext().spanId ?? ''}-01`, 'the destination\'s parent is the proxy\'s span')
  t.equal(sent?.tracestate, 'vendor=abc', 'tracestate carried along')
})

test('Traces: propagateTraceContext false leaves the client\'s traceparent untouched (the span is still recorded); without a TracerProvider nothing is added', async (t) => {
  const tracing = installTracing(t)
  const origin = await startOrigin(t)
  const off = await startProxy(t, { propagateTraceContext: false })
  const first = await rawExchange(off.port, `GET http://127.0.0.1:${origin.port}/off HTTP/1.1\r\nHost: 127.0.0.1\r\ntraceparent: ${CLIENT_TRACEPARENT}\r\nConnection: close\r\n\r\n`)
  t.equal(first.status, 200)
  await eventually(() => tracing.spans().length === 1)
  t.equal(origin.requests[0]?.headers.traceparent, CLIENT_TRACEPARENT)

  const untraced = await startProxy(t)
  const { trace } = await import('@opentelemetry/api')
  trace.disable()
  const second = await rawExchange(untraced.port, `GET http://127.0.0.1:${origin.port}/none HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
  t.equal(second.status, 200)
  t.equal(origin.requests[1]?.headers.traceparent, undefined, 'no TracerProvider, no traceparent invented')
  const third = await rawExchange(untraced.port, `GET http://127.0.0.1:${origin.port}/passed HTTP/1.1\r\nHost: 127.0.0.1\r\ntraceparent: ${CLIENT_TRACEPARENT}\r\nConnection: close\r\n\r\n`)
  t.equal(third.status, 200)
  t.equal(origin.requests[2]?.headers.traceparent, CLIENT_TRACEPARENT, 'the client\'s own passes through like any header')
})

test('Traces: an opaque tunnel is one SERVER span named CONNECT, ended when the tunnel closes, with its kind, close reason, bytes each way and the client\'s address (read for the span though nothing logs)', async (t) => {
  const tracing = installTracing(t)
  const destination = await startTcpDestination(t)
  const proxy = await startProxy(t)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  const upstream = await destination.nextConnection()
  t.same(tracing.spans(), [], 'not ended while the tunnel is open')
  tunnel.socket.write('ping')
  upstream.once('data', () => upstream.end('pong!'))
  t.equal(await readAll(tunnel.socket), 'pong!')
  tunnel.socket.end()
  await once(tunnel.socket, 'close')
  await eventually(() => tracing.spans().length === 1)
  const [span] = tracing.spans()
  t.equal(span?.name, 'CONNECT')
  t.equal(span?.kind, SpanKind.SERVER)
  t.match(span?.attributes, {
    'http.request.method': 'CONNECT',
    'server.address': '127.0.0.1',
    'server.port': destination.port,
    'forward_proxy.kind': 'connect',
    'client.address': '127.0.0.1',
    'forward_proxy.tunnel.kind': 'opaque',
    'forward_proxy.tunnel.close_reason': 'closed',
    'forward_proxy.tunnel.upload.size': 4,
    'forward_proxy.tunnel.download.size': 5,
    'http.response.status_code': 200
  })
})

test('Traces: an intercepted tunnel\'s CONNECT span parents the span of each request inside, and the HTTPS destination receives traceparent naming the request\'s span', async (t) => {
  const tracing = installTracing(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
  const response = await request(`https://127.0.0.1:${origin.port}/inside`, { dispatcher: agent, method: 'POST', body: 'hello' })
  t.equal(response.statusCode, 200)
  await response.body.dump()
  await agent.close()
  await eventually(() => tracing.spans().length === 2)

  const connect = tracing.spans().find((span) => span.name === 'CONNECT')
  const inside = tracing.spans().find((span) => span.name === 'POST')
  t.equal(inside?.kind, SpanKind.CLIENT)
  t.equal(inside?.spanContext().traceId, connect?.spanContext().traceId, 'one trace')
  t.equal(inside?.parentSpanContext?.spanId, connect?.spanContext().spanId, 'the request is a child of its tunnel')
  t.match(inside?.attributes, { 'forward_proxy.kind': 'intercepted', 'url.scheme': 'https', 'client.address': '127.0.0.1', 'http.response.status_code': 200 })
  t.match(connect?.attributes, { 'forward_proxy.tunnel.kind': 'intercepted' })
  const sent = origin.requests[0]?.headers.traceparent
  t.equal(sent, `00-${inside?.spanContext().traceId ?? ''}-${inside?.spanContext().spanId ?? ''}-01`)
})

test('Traces: refused and failed requests end their span with error.type and an error status (403 policy, 407 authentication, 502 connection_refused)', async (t) => {
  const tracing = installTracing(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } }, destinations: { allowedPorts: '*', allowPrivateNetworks: true, deniedHosts: ['denied.example'] } })
  const auth = basic('alice', 's3cret')
  const denied = await openTunnel(proxy.port, 'denied.example:443', { 'Proxy-Authorization': auth })
  t.equal(denied.status, 403)
  denied.socket.destroy()
  const anonymous = await openTunnel(proxy.port, '127.0.0.1:443')
  t.equal(anonymous.status, 407)
  anonymous.socket.destroy()
  const failed = await rawExchange(proxy.port, `GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: 127.0.0.1:1\r\nProxy-Authorization: ${auth}\r\nConnection: close\r\n\r\n`)
  t.equal(failed.status, 502)
  await eventually(() => tracing.spans().length === 3)

  const summary = tracing.spans().map((span) => [span.name, span.attributes['http.response.status_code'], span.attributes['error.type'], span.status.code])
  t.same(summary.sort((a, b) => String(a[1]).localeCompare(String(b[1]))), [
    ['CONNECT', 403, 'http_request_denied', SpanStatusCode.ERROR],
    ['CONNECT', 407, 'http_request_denied', SpanStatusCode.ERROR],
    ['GET', 502, 'connection_refused', SpanStatusCode.ERROR]
  ])
})

test('Traces: propagateTraceContext must be a boolean (ForwardProxyOptionsError naming it)', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(forwardProxy, { propagateTraceContext: 'yes' as unknown as boolean }).ready() }, { name: 'ForwardProxyOptionsError', message: /propagateTraceContext/ })
})

test('Traces: a WebSocket upgrade inside an intercepted tunnel carries traceparent naming its own span, like any request the proxy forwards (one head builder for both), and its span ends when the relay closes', async (t) => {
  const tracing = installTracing(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startWebSocketOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const target = `127.0.0.1:${origin.port}`
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const key = randomBytes(16).toString('base64')
  socket.write(['GET /chat HTTP/1.1', `Host: ${target}`, 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${key}`, `traceparent: ${CLIENT_TRACEPARENT}`].join('\r\n') + '\r\n\r\n')
  let head = ''
  socket.on('data', (chunk: Buffer) => { head += chunk.toString('latin1') })
  await eventually(() => head.includes('\r\n\r\n'))
  t.match(head, /^HTTP\/1\.1 101 /)
  socket.end()
  await once(socket, 'close')
  await eventually(() => tracing.spans().some((span) => span.name === 'GET') && tracing.spans().some((span) => span.name === 'CONNECT'))

  const upgrade = tracing.spans().find((span) => span.name === 'GET')
  t.equal(upgrade?.parentSpanContext?.spanId, CLIENT_SPAN, 'the upgrade request joins the trace its client sent')
  t.equal(upgrade?.attributes['http.response.status_code'], 101, 'its span ended when the relay closed')
  const sent = origin.upgrades[0]?.headers.traceparent
  t.equal(sent, `00-${upgrade?.spanContext().traceId ?? ''}-${upgrade?.spanContext().spanId ?? ''}-01`, 'the client\'s traceparent is replaced by the proxy\'s span')
})
