import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseConfig } from './helpers/internals'
import { runBin } from './helpers/cli-bin'

const parse = (value: unknown): unknown => parseConfig(value, 'proxy.json', '/srv')

test('"http2": true without "tls" is a ConfigError naming /listen/N/http2 (exit 1 from the bin); with tls it is accepted', async (t) => {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0, http2: true }] }))
  const bin = runBin(t, ['--config', file])
  t.equal(await bin.exited, 1)
  t.match(bin.stderr(), /^forward-proxy: .*proxy\.json: \/listen\/0\/http2: HTTP\/2 needs TLS: add "tls" to this listener \(a plain-text listener serves HTTP\/1\.1 only\)\n$/)
  t.equal(bin.stdout(), '', 'nothing started')

  t.throws(() => parse({ listen: [{ port: 1 }, { port: 2, http2: true }] }), { name: 'ConfigError', message: /^proxy\.json: \/listen\/1\/http2: HTTP\/2 needs TLS/ })
  t.throws(() => parse({ listen: [{ port: 1, http2: 'yes' }] }), { message: 'proxy.json: /listen/0/http2 must be true or false' })
  const tls = { cert: 'proxy.pem', key: 'proxy.key' }
  t.same(parseConfig({ listen: [{ port: 1, tls, http2: true }, { port: 2, tls, http2: false }, { port: 3, http2: false }] }, 'p', '/srv').listen, [
    { host: '127.0.0.1', port: 1, tls: { cert: '/srv/proxy.pem', key: '/srv/proxy.key' }, http2: true },
    { host: '127.0.0.1', port: 2, tls: { cert: '/srv/proxy.pem', key: '/srv/proxy.key' } },
    { host: '127.0.0.1', port: 3 }
  ], 'http2: false is plain HTTP/1.1, on TLS or not')
})
