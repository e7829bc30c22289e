import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { test } from 'tap'
import { request } from 'undici'
import { forwardProxy, ProxyError } from '../lib/index'
import { LOOPBACK_TEST_POLICY, startOrigin } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'

test('response transforms run as the onSend hook forwardProxy adds where it is registered: a hook added before sees the destination\'s head, one added after sees the transform\'s and has the last word', async (t) => {
  const origin = await startOrigin(t, (_req, res) => {
    res.setHeader('x-origin', 'yes')
    res.end('body stays')
  })
  const seenBefore: Array<string | undefined> = []
  const seenAfter: Array<string | undefined> = []
  const app = Fastify({ logger: false })
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.proxyDestination !== null) seenBefore.push(String(reply.getHeader('x-transformed')))
    return payload
  })
  await app.register(forwardProxy, {
    destinations: LOOPBACK_TEST_POLICY,
    transforms: [{ transformResponse (_request, _destination, response) { response.headers['x-transformed'] = 'by-transform' } }]
  })
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.proxyDestination === null) return payload
    seenAfter.push(String(reply.getHeader('x-transformed')))
    reply.header('x-transformed', 'by-later-hook')
    return payload
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const proxyUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

  const res = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher: absoluteFormAgent(t, proxyUrl) })
  t.equal(res.statusCode, 200)
  t.equal(await res.body.text(), 'body stays', 'the destination\'s body streams through')
  t.equal(res.headers['x-origin'], 'yes')
  t.equal(res.headers['x-transformed'], 'by-later-hook')
  t.same(seenBefore, ['undefined'], 'the hook added before forwardProxy ran before the transform')
  t.same(seenAfter, ['by-transform'], 'the hook added after forwardProxy saw the transform\'s header')
})

test('a response transform that throws, and an application onSend hook that throws on a forwarded response, answer with the error and none of the destination\'s headers', async (t) => {
  const origin = await startOrigin(t, (req, res) => {
    res.setHeader('set-cookie', 'session=destination-secret')
    res.setHeader('x-origin', 'yes')
    res.end(`body of ${req.url ?? ''}`)
  })
  const app = Fastify({ logger: false })
  await app.register(forwardProxy, {
    destinations: LOOPBACK_TEST_POLICY,
    transforms: [{
      transformResponse (request) {
        if (request.url.includes('/refused')) throw new ProxyError('http_request_denied', 'Refused by policy.', { status: 403, details: 'response refused' })
        if (request.url.includes('/broken')) throw new Error('transform bug')
      }
    }]
  })
  app.addHook('onSend', async (request, _reply, payload) => {
    if (request.url.includes('/hook-fails')) throw new Error('hook bug')
    return payload
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const dispatcher = absoluteFormAgent(t, `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`)

  const expectations = [
    { path: '/refused', status: 403, proxyStatus: /error=http_request_denied; details="response refused"/ },
    { path: '/broken', status: 500, proxyStatus: /error=proxy_internal_error/ },
    { path: '/hook-fails', status: 500, proxyStatus: /error=proxy_internal_error/ }
  ]
  for (const { path, status, proxyStatus } of expectations) {
    const res = await request(`http://127.0.0.1:${origin.port}${path}`, { dispatcher })
    const body = await res.body.text()
    t.equal(res.statusCode, status, path)
    t.match(String(res.headers['proxy-status']), proxyStatus, `${path}: Proxy-Status`)
    t.equal(res.headers['set-cookie'], undefined, `${path}: the destination's Set-Cookie is not in the error answer`)
    t.equal(res.headers['x-origin'], undefined, `${path}: nor its other headers`)
    t.notMatch(body, /body of/, `${path}: nor its body`)
    t.equal(res.headers['content-length'], String(Buffer.byteLength(body)), `${path}: the error answer is framed by its own length`)
  }
  // The connection to the proxy survived each error answer: a normal request still goes through.
  const ok = await request(`http://127.0.0.1:${origin.port}/fine`, { dispatcher })
  t.equal(await ok.body.text(), 'body of /fine')
})

test('a response transform that changes the status to 204: the client gets no body, and the connection goes on', async (t) => {
  const origin = await startOrigin(t, (_req, res) => res.end('a body the client must not get'))
  const app = Fastify({ logger: false })
  await app.register(forwardProxy, {
    destinations: LOOPBACK_TEST_POLICY,
    transforms: [{ transformResponse (_request, _destination, response) { response.statusCode = 204; delete response.headers['content-length'] } }]
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const dispatcher = absoluteFormAgent(t, `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`)
  const res = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher })
  t.equal(res.statusCode, 204)
  t.equal(await res.body.text(), '')
  const again = await request(`http://127.0.0.1:${origin.port}/`, { dispatcher })
  t.equal(again.statusCode, 204, 'the connection carries the next request')
  await again.body.text()
})
