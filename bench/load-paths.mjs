// The paths the single-proxy harnesses (bench/allocation.mjs, bench/cpu-owners.mjs) put under
// load: a work tree's bin with the per-request suite's full configuration (`.`, `../before`),
// `TREE@warn` for it at log level warn, `TREE@minimal` for the suite's minimal configuration (no
// interception, no header rule; `TREE@minimal,warn` for both), or a bench/floor-*.mjs script.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { makeCa, makeLeaf } from './pki.mjs'
import { PLAIN_HOST, startOrigin, TLS_HOST } from './compare/origin.mjs'
import { BENCH_USER, suiteConfig } from './compare/peers.mjs'
import { freePort, startPortPrinter, startProcess, waitForPort } from './compare/processes.mjs'
import { locate } from './compare/tools.mjs'

/**
 * What the harnesses share: a temporary folder named after `name`, the destination and operator
 * CAs, the origin (nginx when installed, bench/origin.mjs otherwise) with a leaf for both hosts,
 * and the URL hey asks for in `mode` (`http`, or `intercept`: https:// to the intercepted host).
 */
export async function loadBench (name, mode) {
  const directory = mkdtempSync(join(tmpdir(), `ffp-${name}-`))
  const destinationCa = makeCa(directory, 'destination-ca')
  const operatorCa = makeCa(directory, 'operator-ca')
  const origin = await startOrigin(locate(['nginx']), directory, makeLeaf(directory, 'origin', destinationCa, [TLS_HOST, PLAIN_HOST]))
  const url = mode === 'http' ? `http://${PLAIN_HOST}:${origin.httpPort}/small` : `https://${TLS_HOST}:${origin.httpsPort}/small`
  return { directory, destinationCa, operatorCa, origin, url }
}

/** The per-request suite's full configuration (bench/compare/peers.mjs), or its minimal one, at log level `level`. */
export function binConfig (port, level, minimal, cas) {
  return { ...suiteConfig(minimal ? 'minimal' : 'full', port, cas), log: { level } }
}

/**
 * Returns `start(path)`, which starts `path` (see the top of this file) with `nodeArgs` before
 * its program, files in `directory`, the bins' leaves and the floors' intercepting leaf signed by
 * `operatorCa`, destinations verified against `destinationCa`; it resolves with the process,
 * its port and the user its clients must send (undefined for a floor, which asks for none).
 */
export function pathStarter ({ directory, operatorCa, destinationCa, nodeArgs }) {
  const floorLeaf = makeLeaf(directory, 'floor-intercept-leaf', operatorCa, [TLS_HOST])
  return async function start (path) {
    if (path.endsWith('.mjs')) {
      const args = path.includes('intercept') ? [floorLeaf.certPath, floorLeaf.keyPath, destinationCa.certPath] : []
      const { started, port } = await startPortPrinter(resolve(path), args, path, undefined, nodeArgs)
      return { started, port, user: undefined }
    }
    const [tree, variant = ''] = path.split('@')
    const tokens = variant.split(',')
    const minimal = tokens.includes('minimal')
    const level = tokens.find((token) => token !== '' && token !== 'minimal') ?? 'info'
    const port = await freePort()
    const configPath = join(directory, `bin-${port}.json`)
    writeFileSync(configPath, JSON.stringify(binConfig(port, level, minimal, { operatorCa, destinationCa })))
    const started = startProcess(process.execPath, [...nodeArgs, join(resolve(tree), 'dist', 'lib', 'cli', 'main.js'), '--config', configPath], { env: { ...process.env, NODE_ENV: 'production' }, stdoutPath: join(directory, `bin-${port}.log`) })
    await waitForPort('127.0.0.1', port, { ...started, name: path }, 60_000)
    return { started, port, user: BENCH_USER }
  }
}
