import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, runBin } from './helpers/cli-bin'

test('bin: the start-up summary follows the start-up log lines in one block (no JSON line before its end), and its trust lines say curl prefers CURL_CA_BUNDLE over SSL_CERT_FILE', async (t) => {
  const dir = t.testdir()
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    interception: { hosts: ['api.example.com'] },
    dataDirectory: 'state'
  }))
  const bin = runBin(t, ['--config', file])
  await listeningUrls(bin)
  const output = bin.stdout()
  const summaryStart = output.indexOf('fastify-forward-proxy\n')
  const summaryEnd = output.indexOf('health check:')
  t.ok(summaryStart >= 0 && summaryEnd > summaryStart, 'the summary was printed')
  const summary = output.slice(summaryStart, summaryEnd)
  t.notMatch(summary, /\{"level":/, 'no log line inside the summary')
  const listening = output.indexOf('"msg":"Server listening at')
  t.ok(listening >= 0 && listening < summaryStart, 'Fastify\'s "Server listening at" line comes before the summary')
  const developmentCa = output.indexOf('DEVELOPMENT CA (not for production)')
  t.ok(developmentCa >= 0 && developmentCa < summaryStart, 'the development CA warning\'s log line comes before the summary')
  t.match(summary, /curl reads CURL_CA_BUNDLE before SSL_CERT_FILE: when both are set, CURL_CA_BUNDLE wins/)
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})
