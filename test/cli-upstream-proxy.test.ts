import { test } from 'tap'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { startOrigin, startProxy } from './helpers/servers'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin } from './helpers/intercepting-proxy'

const curl = promisify(execFile)

test('bin: upstreamProxies in the file: curl reaches an https:// origin through a CONNECT and an http:// origin in absolute form through the upstream; the summary and the logs never show its credentials', async (t) => {
  const pki = await makeInterceptionPki(t)
  const tlsOrigin = await startTlsOrigin(t, pki, (_req, res) => { res.end('tls ok') })
  const plainOrigin = await startOrigin(t)
  const seen: string[] = []
  const upstream = await startProxy(t, { via: 'upstream', auth: { users: { corp: 'corp-secret-pw' } } }, (app: FastifyInstance) => {
    app.addHook('onRequest', async (req) => { seen.push(`${req.method} ${req.url}`) })
  })
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: LOOPBACK_ORIGINS,
    upstreamProxies: [{ hosts: ['localhost'], url: 'direct' }, { hosts: ['*'], url: `http://corp:corp-secret-pw@127.0.0.1:${upstream.port}` }],
    log: { level: 'info' }
  }))
  const bin = runBin(t, ['--config', file])
  const proxy = `http://127.0.0.1:${portOf((await listeningUrls(bin))[0] ?? '')}`
  t.match(bin.stdout(), new RegExp(`upstream proxies: localhost direct; \\* via http://127\\.0\\.0\\.1:${upstream.port} \\(with credentials\\)`))
  const tunnelled = await curl('curl', ['-sS', '--proxy', proxy, '--cacert', pki.destinationCa.certPath, `https://127.0.0.1:${tlsOrigin.port}/secure`])
  t.equal(tunnelled.stdout, 'tls ok')
  const forwarded = await curl('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--proxy', proxy, `http://127.0.0.1:${plainOrigin.port}/plain`])
  t.equal(forwarded.stdout, '200')
  t.same(seen, [`CONNECT 127.0.0.1:${tlsOrigin.port}`, `GET http://127.0.0.1:${plainOrigin.port}/plain`])
  bin.child.kill('SIGTERM')
  await bin.exited
  t.notOk(bin.stdout().includes('corp-secret-pw') || bin.stderr().includes('corp-secret-pw'), 'the credentials are in no output')
})
