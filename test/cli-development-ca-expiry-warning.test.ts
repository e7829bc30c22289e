import { test } from 'tap'
import { execFile } from 'node:child_process'
import { chmodSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { parseConfig, startupSummary } from './helpers/internals'
import { freshDataDirectory } from './helpers/development-ca-dir'
import { startConfiguredServer } from './helpers/cli-server'

const run = promisify(execFile)

/** A development CA made by openssl in `dataDirectory` (as an earlier start would have left it), valid for `days`. */
async function existingDevelopmentCa (dataDirectory: string, days: number): Promise<void> {
  mkdirSync(dataDirectory, { recursive: true, mode: 0o700 })
  const keyPath = join(dataDirectory, 'ca.key')
  await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-subj', '/CN=fastify-forward-proxy development CA (test)', '-days', String(days),
    '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout', keyPath, '-out', join(dataDirectory, 'ca.pem')
  ])
  chmodSync(keyPath, 0o600)
}

test('server: a development CA ending within 30 days is reused with a start-up warning saying when it ends and how to replace it; a fresh one gets none', async (t) => {
  const ending = freshDataDirectory(t)
  await existingDevelopmentCa(ending, 10)
  const config = { listen: [{ host: '127.0.0.1', port: 0 }], interception: { hosts: ['api.example'] } }
  const summaryOf = (value: object, urls: string[], ca: Parameters<typeof startupSummary>[2]): string => startupSummary(parseConfig(value, 'test.json', '/'), urls, ca).join('\n')
  const server = await startConfiguredServer(t, { ...config, dataDirectory: ending })
  t.equal(server.developmentCa?.created, false, 'the existing CA is reused, not replaced')
  const lines = summaryOf({ ...config, dataDirectory: ending }, server.urls, server.developmentCa)
  const end = server.developmentCa?.notAfter.toISOString().slice(0, 10) ?? ''
  t.match(lines, `WARNING: the development CA ends on ${end} (in 9 days); the proxy will not start with it after that.`)
  t.match(lines, `remove ${join(ending, 'ca.pem')} and ${join(ending, 'ca.key')}, start again, and make clients trust the new certificate`)

  const fresh = freshDataDirectory(t)
  const created = await startConfiguredServer(t, { ...config, dataDirectory: fresh })
  t.equal(created.developmentCa?.created, true)
  t.notMatch(summaryOf({ ...config, dataDirectory: fresh }, created.urls, created.developmentCa), /development CA ends on/, 'a new CA (one year) has no expiry warning')
})
