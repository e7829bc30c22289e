import { test, type Test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, runBin, type BinProcess } from './helpers/cli-bin'
import { freshDataDirectory } from './helpers/development-ca-dir'
import { CA_EXTENSIONS, fixtureDirectory, makeCa } from './helpers/ca-fixtures'
import { openInterceptedTls } from './helpers/intercepted-client'

const PROBE = join(__dirname, 'helpers', 'loaded-packages-probe.cjs')

/** Starts the bin with `config` and the probe; resolves once it listens, with its proxy port. */
async function startProbedBin (t: Test, config: object): Promise<{ bin: BinProcess, port: number }> {
  const path = join(t.testdir(), 'config.json')
  writeFileSync(path, JSON.stringify(config))
  const bin: BinProcess = runBin(t, ['--config', path], { NODE_OPTIONS: `--require "${PROBE}"` })
  const [url] = await listeningUrls(bin)
  return { bin, port: Number(new URL(url ?? '').port) }
}

/** The npm packages the bin has loaded so far, as the probe lists them. */
async function packagesLoadedBy (bin: BinProcess): Promise<string[]> {
  const seen = (bin.stderr().match(/loaded-packages /g) ?? []).length
  const line = new Promise<string>((resolve) => {
    const check = (): void => {
      const match = [...bin.stderr().matchAll(/loaded-packages (\[.*\])\n/g)][seen]
      if (match === undefined) return
      bin.child.stderr.removeListener('data', check)
      resolve(match[1] ?? '[]')
    }
    bin.child.stderr.on('data', check)
  })
  bin.child.kill('SIGUSR2')
  return JSON.parse(await line) as string[]
}

/** Starts the bin with `config` and the probe, and returns the npm packages it loaded once listening. */
async function loadedPackages (t: Test, config: object): Promise<string[]> {
  const { bin } = await startProbedBin(t, config)
  const packages = await packagesLoadedBy(bin)
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
  return packages
}

test('bin: without interception, metrics and redis it loads neither the certificate code (pkijs, asn1js), the OpenTelemetry SDK nor ioredis', async (t) => {
  const packages = await loadedPackages(t, { listen: [{ host: '127.0.0.1', port: 0 }] })
  t.ok(packages.includes('fastify') && packages.includes('undici'), 'the probe sees the packages the proxy needs')
  for (const name of ['pkijs', 'asn1js', '@opentelemetry/sdk-metrics', 'ioredis']) t.notOk(packages.includes(name), `${name} not loaded`)
})

test('bin: with interception and metrics it loads the OpenTelemetry SDK, and mints its development CA without PKI.js', async (t) => {
  const packages = await loadedPackages(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    interception: { hosts: ['example.test'] },
    dataDirectory: freshDataDirectory(t),
    metrics: { port: 0 }
  })
  t.ok(packages.includes('@opentelemetry/sdk-metrics'), '@opentelemetry/sdk-metrics loaded')
  for (const name of ['pkijs', 'asn1js']) t.notOk(packages.includes(name), `${name} not loaded by the development CA's minting`)
})

test('bin: with interception and an operator CA it checks the CA and mints leaves without PKI.js', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { extensions: [...CA_EXTENSIONS, 'nameConstraints=critical,permitted;IP:127.0.0.0/255.0.0.0'] })
  const { bin, port } = await startProbedBin(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: { allowedNetworks: ['127.0.0.0/8'], allowedPorts: '*' },
    interception: { hosts: ['127.0.0.1'], ca: { cert: ca.certPath, key: ca.keyPath } }
  })
  const atStart = await packagesLoadedBy(bin)
  t.ok(atStart.includes('fastify'), 'the probe sees the packages the proxy needs')
  for (const name of ['pkijs', 'asn1js']) t.notOk(atStart.includes(name), `${name} not loaded at start-up`)

  // A client's TLS handshake inside an intercepted tunnel: the leaf for 127.0.0.1 is minted, under the CA's name constraints.
  const tls = await openInterceptedTls(t, port, `127.0.0.1:${port}`, { ca: Buffer.from(ca.cert) })
  t.equal(tls.authorized, true, 'the client trusts the leaf the operator CA signed')
  tls.destroy()
  const afterLeaf = await packagesLoadedBy(bin)
  for (const name of ['pkijs', 'asn1js']) t.notOk(afterLeaf.includes(name), `${name} not loaded by minting a leaf`)
  bin.child.kill('SIGTERM')
  t.equal(await bin.exited, 0)
})
