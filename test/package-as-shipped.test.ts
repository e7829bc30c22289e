import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import { tmpdir } from 'node:os'
import { dirname, join, normalize } from 'node:path'
import { promisify } from 'node:util'
import { t as file, test, type Test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { basic, rawExchange } from './helpers/raw-client'
import { childEnv } from './helpers/child-node'
import { packInto } from './helpers/package-tarball'
import { builtFromCurrentSources } from './helpers/cli-bin'
import { credentialInjectionEnv } from './helpers/credential-injection-example'

const ROOT = join(__dirname, '..')
const run = promisify(execFile)

// Installing the package and running each example takes a while on a loaded machine.
file.setTimeout(240_000)

/**
 * `npm pack` into a temporary directory: the file list and the tarball. It packs dist/ as `npm
 * test` built it (pretest), without prepack's build, which would rewrite the modules the other
 * tests' bins are loading; the fresh-install check, run alone, packs with the build.
 */
async function pack (t: Test): Promise<{ files: string[], tarball: string, directory: string }> {
  const directory = mkdtempSync(join(tmpdir(), 'ffp-pack-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  return { ...await packInto(directory, { build: false }), directory }
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf (markdown: string): Set<string> {
  const anchors = new Set<string>()
  for (const heading of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    anchors.add((heading[1] ?? '').trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-'))
  }
  return anchors
}

/** Every relative link of the shipped Markdown files that does not resolve to a shipped file (or heading). */
function brokenLinks (files: string[]): string[] {
  const shipped = new Set(files)
  const isShipped = (path: string): boolean => shipped.has(path) || files.some((file) => file.startsWith(`${path}/`))
  const broken: string[] = []
  for (const file of files.filter((path) => path.endsWith('.md'))) {
    const text = readFileSync(join(ROOT, file), 'utf8')
    for (const link of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = link[1] ?? ''
      if (/^[a-z]+:/i.test(target)) continue
      const [path = '', anchor] = target.split('#')
      const resolved = path === '' ? file : normalize(join(dirname(file), path))
      if (!isShipped(resolved)) broken.push(`${file}: ${target} (not in the package)`)
      else if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(readFileSync(join(ROOT, resolved), 'utf8')).has(anchor)) broken.push(`${file}: ${target} (no such heading)`)
    }
  }
  return broken
}

/** `name@version` of each package as installed in `directory`'s node_modules. */
function resolvedVersions (directory: string, names: string[]): string {
  return names.map((name) => `${name}@${(JSON.parse(readFileSync(join(directory, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version}`).join(', ')
}

/** Runs a shipped example with node from the unpacked package; resolves once `ready` appears in its output. */
async function runExample (t: Test, cwd: string, script: string, env: Record<string, string>, ready: RegExp): Promise<RegExpExecArray> {
  const child = spawn(process.execPath, [script], { cwd, env: childEnv(env) })
  let output = ''
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return await new Promise((resolve, reject) => {
    const look = (chunk: Buffer): void => {
      output += chunk.toString()
      const match = ready.exec(output)
      if (match !== null) resolve(match)
    }
    child.stdout.on('data', look)
    child.stderr.on('data', look)
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready:\n${output}`)))
  })
}

test('package: npm pack ships the examples (sources and compiled), LICENSE and every file the shipped Markdown links to; each example runs from the unpacked package with node', async (t) => {
  if (!builtFromCurrentSources()) {
    t.fail('dist/ is older than lib/ or examples/: run `npm run build` first (npm test does)')
    return
  }
  const { files, tarball, directory } = await pack(t)
  t.comment(`npm pack: ${files.length} files`)
  for (const path of ['LICENSE', 'README.md', 'package.json', 'dist/lib/index.js', 'dist/lib/cli/main.js', 'examples/embedding.ts', 'examples/proxy.example.json',
    'dist/examples/embedding.js', 'dist/examples/credential-injection.js', 'dist/examples/est-dev-service/main.js', 'dist/examples/capture-viewer.js']) {
    t.ok(files.includes(path), `ships ${path}`)
  }
  t.notOk(files.some((path) => path.startsWith('test/') || path.startsWith('bench/')), 'no tests or benchmarks')
  t.strictSame(brokenLinks(files), [], 'every relative link in the shipped Markdown resolves inside the package')

  await run('tar', ['xzf', tarball, '-C', directory])
  const unpacked = join(directory, 'package')
  // Its dependencies as a user gets them: no lockfile ships, so npm resolves the newest versions
  // the ranges allow (the repository's node_modules would hide a dependency release that breaks us).
  t.notOk(files.includes('package-lock.json'), 'no lockfile ships')
  await run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund'], { cwd: unpacked, maxBuffer: 64 * 1024 * 1024 })
  t.comment(`resolved: ${resolvedVersions(unpacked, ['fastify', 'find-my-way', 'undici'])}`)

  // embedding: its own route and a proxy on the same port.
  const embedding = await runExample(t, unpacked, 'dist/examples/embedding.js', { PROXY_PORT: '0' }, /Server listening at (http:\/\/127\.0\.0\.1:(\d+))/)
  const own = await request(`${embedding[1]}/healthz`)
  t.equal(own.statusCode, 200, 'embedding: the app route answers')
  t.same(await own.body.json(), { status: 'ok' })
  const anonymous = await rawExchange(Number(embedding[2]), 'GET http://www.example.com/ HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n')
  t.equal(anonymous.status, 407, 'embedding: proxy requests need credentials')
  t.match(anonymous.text, /proxy-status: fastify-forward-proxy; error=http_request_denied/i)

  // capture-viewer: its GET /captures answers a HAR document.
  const viewer = await runExample(t, unpacked, 'dist/examples/capture-viewer.js', { PROXY_PORT: '0' }, /Server listening at (http:\/\/127\.0\.0\.1:\d+)/)
  const captures = await request(`${viewer[1]}/captures`)
  t.equal(captures.statusCode, 200, 'capture-viewer: /captures answers')
  t.same(await captures.body.json(), { log: { version: '1.2', creator: { name: 'capture-viewer', version: '1.0' }, entries: [], _dropped: 0 } }, 'capture-viewer: an empty HAR before any proxy request')

  // credential-injection: alice's requests to the API get her token.
  const pki = await makeInterceptionPki(t)
  const api = await startTlsOrigin(t, pki)
  const injection = await runExample(t, unpacked, 'dist/examples/credential-injection.js',
    credentialInjectionEnv(pki, api.port, { alicePassword: 'alice-pw', bobPassword: 'bob-pw', aliceApiToken: 'alice-token' }), /Server listening at (http:\/\/127\.0\.0\.1:\d+)/)
  const agent = new ProxyAgent({ uri: injection[1] ?? '', token: basic('alice', 'alice-pw'), requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  const viaProxy = await request(`https://127.0.0.1:${api.port}/v1/me`, { dispatcher: agent })
  t.equal(viaProxy.statusCode, 200, 'credential-injection: the API answers through the intercepted tunnel')
  await viaProxy.body.dump()
  t.equal(api.requests.at(-1)?.headers.authorization as string | undefined, 'Bearer alice-token', 'credential-injection: the token was injected')

  // est-dev-service: serves its CA over TLS.
  const est = await runExample(t, unpacked, 'dist/examples/est-dev-service/main.js', {
    EST_PORT: '0',
    EST_CA_CERT: pki.operatorCa.certPath,
    EST_CA_KEY: pki.operatorCa.certPath.replace(/\.pem$/, '.key'),
    EST_ALLOWLIST: 'api.example.com',
    EST_USERS: 'proxy:change-me'
  }, /listening on https:\/\/127\.0\.0\.1:(\d+)/)
  const cacerts = await new Promise<{ status: number | undefined, body: string }>((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port: Number(est[1]), path: '/.well-known/est/cacerts', servername: 'localhost', ca: pki.operatorCa.cert }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode, body }))
    })
    req.on('error', reject)
    req.end()
  })
  t.equal(cacerts.status, 200, 'est-dev-service: /cacerts answers over TLS trusted by its CA')
  t.match(cacerts.body, /^[A-Za-z0-9+/=\r\n]+$/, 'base64 PKCS#7')
})
