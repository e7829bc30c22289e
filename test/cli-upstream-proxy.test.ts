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
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

const curl = promisify(execFile)

test('bin: upstreamProxies in the file: curl reaches an https:// origin through a CONNECT and an http:// origin in absolute form through the upstream; the summary and the logs never show its credentials', async (t) => {
  const pki = await makeInterceptionPki(t)
  const tlsOrigin = await startTlsOrigin(t, pki, (_req, res) => { res.end('tls ok') })
  const plainOrigin = await startOrigin(t)
  const seen: string[] = []
  const upstream = await startProxy(t, { via: 'upstream', auth: { users: { corp: 'corp-secret-pw' } } }, (app: FastifyInstance) => {
    // originalUrl: a CONNECT is routed under the path /, its target as received is kept there.
    app.addHook('onRequest', async (req) => { seen.push(`${req.method} ${req.originalUrl}`) })
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

test('bin: two bins chained: the file\'s "via" gives each its own pseudonym, so http:// passes both hops; with the same pseudonym the upstream sees a loop (508)', async (t) => {
  const origin = await startOrigin(t)
  const startBin = async (name: string, config: Record<string, unknown>): Promise<string> => {
    const file = join(t.testdir(), `${name}.json`)
    writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], destinations: LOOPBACK_ORIGINS, log: { level: 'warn' }, ...config }))
    const bin = runBin(t, ['--config', file])
    return `127.0.0.1:${portOf((await listeningUrls(bin))[0] ?? '')}`
  }
  const upstream = await startBin('upstream', { via: 'corp-egress' })
  const front = await startBin('front', { upstreamProxies: [{ hosts: ['*'], url: `http://${upstream}` }] })
  const forwarded = await curl('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '--proxy', `http://${front}`, `http://127.0.0.1:${origin.port}/chained`])
  t.equal(forwarded.stdout, '200')
  t.equal(origin.requests[0]?.headers.via, '1.1 fastify-forward-proxy, 1.1 corp-egress')
  const dialedBefore = origin.accepts.accepted
  const sameName = await startBin('same-name', {})
  const looping = await startBin('looping', { upstreamProxies: [{ hosts: ['*'], url: `http://${sameName}` }] })
  const refused = await curl('curl', ['-sS', '-D', '-', '-o', '/dev/null', '--proxy', `http://${looping}`, `http://127.0.0.1:${origin.port}/loop`])
  t.match(refused.stdout, /^HTTP\/1\.1 508 /)
  t.match(refused.stdout, /proxy-status: fastify-forward-proxy; error=proxy_loop_detected/i)
  t.equal(origin.requests.length, 1)
  await expectNothingDialedBefore(t, origin.accepts, 'the looping request never reached the origin', { after: dialedBefore })
})

test('bin: "via" must be an HTTP token; a bad one fails start-up naming the key', async (t) => {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], via: 'two words' }))
  const bin = runBin(t, ['--config', file])
  const code = await bin.exited
  t.not(code, 0)
  t.match(bin.stderr(), /via/)
  t.match(bin.stderr(), /HTTP token/)
})
