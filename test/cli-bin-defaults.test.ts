import { test } from 'tap'
import { request } from 'undici'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { rawExchange } from './helpers/raw-client'

test('bin: without a configuration it serves an open HTTP/1.1 proxy on 127.0.0.1 with the strict policy, and SIGINT exits 0', async (t) => {
  // --port 0 replaces only the default port 8080, which a test machine may have in use.
  const bin = runBin(t, ['--port', '0'])
  const urls = await listeningUrls(bin)
  t.equal(urls.length, 1)
  t.match(urls[0], /^http:\/\/127\.0\.0\.1:\d+$/)
  t.match(bin.stdout(), /authentication: OFF/)
  t.match(bin.stdout(), /destinations: hosts \*; ports 80, 443; private networks refused\n/)
  t.match(bin.stdout(), /limits: 10000 tunnels, 10000 forwarded requests in flight, tunnel idle 300000 ms, http activity 100000 ms, connect 10000 ms, first byte 10000 ms, 100 HTTP\/2 stream resets per 10 s, tunnel set-up wait 100 ms/)
  t.match(bin.stdout(), /interception: off\n/)

  const health = await request(`${urls[0] ?? ''}/healthz`)
  t.equal(health.statusCode, 200)
  t.same(await health.body.json(), { status: 'ok' })
  // The strict default policy refuses loopback destinations (refused before any connect).
  const refused = await rawExchange(Number(new URL(urls[0] ?? '').port), 'GET http://127.0.0.1:80/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
  t.equal(refused.status, 403)
  t.match(refused.text, /proxy-status: fastify-forward-proxy; error=destination_ip_prohibited/i)

  bin.child.kill('SIGINT')
  t.equal(await bin.exited, 0)
  t.match(bin.stdout(), /"level":30,.*"msg":"Server listening at/, 'pino JSON logs on stdout at level info')
})
