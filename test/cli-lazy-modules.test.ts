import { test, type Test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, runBin, type BinProcess } from './helpers/cli-bin'
import { freshDataDirectory } from './helpers/development-ca-dir'

const PROBE = join(__dirname, 'helpers', 'loaded-packages-probe.cjs')

/** Starts the bin with `config` and the probe, and returns the npm packages it loaded once listening. */
async function loadedPackages (t: Test, config: object): Promise<string[]> {
  const path = join(t.testdir(), 'config.json')
  writeFileSync(path, JSON.stringify(config))
  const bin: BinProcess = runBin(t, ['--config', path], { NODE_OPTIONS: `--require "${PROBE}"` })
  await listeningUrls(bin)
  const line = new Promise<string>((resolve) => {
    const check = (): void => {
      const match = bin.stderr().match(/loaded-packages (\[.*\])\n/)
      if (match === null) return
      bin.child.stderr.removeListener('data', check)
      resolve(match[1] ?? '[]')
    }
    bin.child.stderr.on('data', check)
  })
  bin.child.kill('SIGUSR2')
  const packages = JSON.parse(await line) as string[]
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  return packages
}

test('bin: without interception, metrics and redis it loads neither the certificate code (pkijs, asn1js), the OpenTelemetry SDK nor ioredis', async (t) => {
  const packages = await loadedPackages(t, { listen: [{ host: '127.0.0.1', port: 0 }] })
  t.ok(packages.includes('fastify') && packages.includes('undici'), 'the probe sees the packages the proxy needs')
  for (const name of ['pkijs', 'asn1js', '@opentelemetry/sdk-metrics', 'ioredis']) t.notOk(packages.includes(name), `${name} not loaded`)
})

test('bin: with interception and metrics it loads the certificate code and the OpenTelemetry SDK', async (t) => {
  const packages = await loadedPackages(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    interception: { hosts: ['example.test'] },
    dataDirectory: freshDataDirectory(t),
    metrics: { port: 0 }
  })
  for (const name of ['pkijs', 'asn1js', '@opentelemetry/sdk-metrics']) t.ok(packages.includes(name), `${name} loaded`)
})
