import { test } from 'tap'
import { startProxy, startSentinel } from './helpers/servers'
import { openTunnel, rawExchange } from './helpers/raw-client'
import { compileHostPattern } from './helpers/internals'
import { createHostListSelector } from '../lib/index'
import type { FastifyRequest } from 'fastify'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const MAPPED_SPELLINGS = ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '127.0.0.1']

test('deniedHosts naming an IP refuses every spelling of that address, over CONNECT and http://, with nothing dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { destinations: { allowPrivateNetworks: true, allowedPorts: '*', deniedHosts: ['127.0.0.1'] } })
  for (const host of MAPPED_SPELLINGS) {
    const tunnel = await openTunnel(proxy.port, `${host}:${sentinel.port}`)
    t.equal(tunnel.status, 403, `CONNECT ${host}`)
    t.match(tunnel.head, /error=http_request_denied; details="host not allowed"/)
    tunnel.socket.destroy()
    const forwarded = await rawExchange(proxy.port, `GET http://${host}:${sentinel.port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(forwarded.status, 403, `GET http://${host}/`)
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was dialed')
})

test('a CIDR range in deniedHosts refuses every address inside it, in any spelling', async (t) => {
  const sentinel = await startSentinel(t)
  const proxy = await startProxy(t, { destinations: { allowPrivateNetworks: true, allowedPorts: '*', deniedHosts: ['127.0.0.0/8'] } })
  for (const host of [...MAPPED_SPELLINGS, '127.0.0.9', '[::ffff:7f00:9]', '2130706433']) {
    const tunnel = await openTunnel(proxy.port, `${host}:${sentinel.port}`)
    t.equal(tunnel.status, 403, `CONNECT ${host}`)
    tunnel.socket.destroy()
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing was dialed')
})

test('interception host lists and header-rule hosts match IP literals by address', async (t) => {
  const selector = createHostListSelector(['127.0.0.1', '10.0.0.0/8'])
  const request = {} as unknown as FastifyRequest
  for (const host of ['127.0.0.1', '::ffff:127.0.0.1', '::ffff:7f00:1', '10.1.2.3', '::ffff:a01:203']) {
    t.equal(await selector.shouldIntercept(request, { host, port: 443 }, new AbortController().signal), true, `${host} is intercepted`)
  }
  for (const host of ['127.0.0.2', '::1', '11.0.0.1', 'localhost']) {
    t.equal(await selector.shouldIntercept(request, { host, port: 443 }, new AbortController().signal), false, `${host} is not`)
  }
  t.equal(compileHostPattern('10.0.0.0/33'), null, 'an impossible range is refused')
  t.equal(compileHostPattern('::ffff:10.0.0.0/104')?.matches('10.200.0.1'), true, 'an IPv4-mapped range is the IPv4 range it maps')
})
