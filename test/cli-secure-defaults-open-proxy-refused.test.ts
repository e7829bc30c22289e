import { test } from 'tap'
import { runBin } from './helpers/cli-bin'
import { isLoopbackHost, parseConfig, startProxyServer } from './helpers/internals'

const NO_STACK = /\n\s+at /

test('bin: --host 0.0.0.0 without "users" is refused before anything listens, naming users and allowAnonymous', async (t) => {
  const bin = runBin(t, ['--host', '0.0.0.0', '--port', '0'])
  t.equal(await bin.exited, 1)
  t.match(bin.stderr(), /^forward-proxy: \/listen\/0\/host \(or --host\): "0\.0\.0\.0" is not a loopback address and no "users" are configured, so anyone who can reach it could use the proxy\. Add "users" \(proxy authentication\), listen on 127\.0\.0\.1, or set "allowAnonymous": true to accept this deliberately\n$/)
  t.notMatch(bin.stderr(), NO_STACK)
  t.equal(bin.stdout(), '', 'nothing started, nothing printed')
})

const config = (value: object): ReturnType<typeof parseConfig> => parseConfig({ log: { level: 'silent' }, ...value }, 'test.json', '/')

test('server: a second listener on a non-loopback address without "users" is refused with that listener named, before anything listens', async (t) => {
  await t.rejects(startProxyServer(config({ listen: [{ host: '127.0.0.1', port: 0 }, { host: '::', port: 0 }] })),
    { name: 'ConfigError', message: /^\/listen\/1\/host: "::" is not a loopback address and no "users" are configured/ })
  await t.rejects(startProxyServer(config({ users: {}, listen: [{ host: '0.0.0.0', port: 0 }] })),
    { name: 'ConfigError', message: /^\/listen\/0\/host \(or --host\): "0\.0\.0\.0" is not a loopback address/ }, 'an empty "users" table is no authentication')
})

test('server: "allowAnonymous": true starts an unauthenticated proxy on 0.0.0.0 deliberately', async (t) => {
  const server = await startProxyServer(config({ allowAnonymous: true, listen: [{ host: '0.0.0.0', port: 0 }] }))
  t.match(server.urls[0], /^http:\/\/0\.0\.0\.0:\d+$/)
  const healthz = await fetch(`http://127.0.0.1:${new URL(server.urls[0] ?? '').port}/healthz`)
  t.equal(healthz.status, 200, 'it serves')
  await server.close()
})

test('server: "users" make a non-loopback listener acceptable without allowAnonymous', async (t) => {
  const server = await startProxyServer(config({ users: { alice: 'correct horse' }, listen: [{ host: '0.0.0.0', port: 0 }] }))
  t.match(server.urls[0], /^http:\/\/0\.0\.0\.0:\d+$/)
  await server.close()
})

test('server: loopback listeners (127.0.0.0/8, ::1, localhost) need neither users nor allowAnonymous', async (t) => {
  for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost']) {
    const server = await startProxyServer(config({ listen: [{ host, port: 0 }] }))
    t.equal(server.urls.length, 1, `${host} starts`)
    await server.close()
  }
})

test('isLoopbackHost: only loopback addresses and "localhost"; other names, wildcard addresses and IPv6 forms carrying 127.0.0.1 (NAT64, 6to4, IPv4-compatible) are not', async (t) => {
  for (const host of ['127.0.0.1', '127.255.255.254', '::1', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST']) t.ok(isLoopbackHost(host), host)
  for (const host of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.5', 'fe80::1', '::2', '64:ff9b::7f00:1', '2002:7f00:1::', '::127.0.0.1', 'proxy.example', 'localhost.example', '127.0.0.1.nip.io']) t.notOk(isLoopbackHost(host), host)
})
