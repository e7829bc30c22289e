import { spawn } from 'node:child_process'
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type Test } from 'tap'
import { BUILT_BIN, listeningUrls, outputOf, printed, type BinProcess } from './helpers/cli-bin'
import { childEnv } from './helpers/child-node'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { fixtureDirectory, makeCa, type CaFixture } from './helpers/ca-fixtures'
import { basic, rawExchange } from './helpers/raw-client'
import { startOrigin } from './helpers/servers'
import { within } from './helpers/within'

// A pod's user: nobody, with its group (nogroup) as the fsGroup kubelet gives the Secret files.
const POD_UID = 65534
const FS_GROUP = 65534
// A group the pod's user is not in.
const OTHER_GROUP = 0

const NOT_ROOT = process.getuid?.() !== 0 ? 'starting the bin as another user needs root (CI runs as root)' : false

/** One file of a Secret volume: its content, mode and owner as kubelet leaves them. */
interface VolumeFile { content: string, mode: number, uid: number, gid: number }

/**
 * Writes (or swaps in) a Secret volume the way kubelet's atomic writer does: the files in a new
 * `..<timestamp>` folder, a `..data_tmp` symlink to it renamed over `..data`, and one symlink
 * per key (`tls.key -> ..data/tls.key`), made once.
 */
function writeVolume (directory: string, stamp: string, files: Record<string, VolumeFile>): void {
  mkdirSync(directory, { recursive: true, mode: 0o755 })
  chmodSync(directory, 0o755)
  const version = join(directory, `..${stamp}`)
  mkdirSync(version, { mode: 0o755 })
  chmodSync(version, 0o755)
  for (const [name, file] of Object.entries(files)) {
    const path = join(version, name)
    writeFileSync(path, file.content)
    chownSync(path, file.uid, file.gid)
    chmodSync(path, file.mode)
  }
  symlinkSync(`..${stamp}`, join(directory, '..data_tmp'))
  renameSync(join(directory, '..data_tmp'), join(directory, '..data'))
  for (const name of Object.keys(files)) {
    if (!existsSync(join(directory, name))) symlinkSync(join('..data', name), join(directory, name))
  }
}

/** A folder every user may traverse (the bin runs as nobody), removed at teardown. */
function podDirectory (t: Test): string {
  const directory = mkdtempSync(join(tmpdir(), 'ffp-kubelet-'))
  chmodSync(directory, 0o755)
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

/**
 * The built bin as the pod's user and group (supplementary groups dropped, as a container has none
 * beyond fsGroup), run by a copy of this node in the pod's folder: the node running the tests may
 * sit where nobody cannot reach it (CI unpacks Node 22 and 24 into a private temporary folder).
 */
function runAsPod (t: Test, root: string, configPath: string): BinProcess {
  const node = join(root, 'node')
  if (!existsSync(node)) {
    copyFileSync(process.execPath, node)
    chmodSync(node, 0o755)
  }
  // Through env(1): tap's spawn wrapper puts its process-info hook back into NODE_OPTIONS, and
  // that hook would write into the repository's .tap folder, which the pod's user may not.
  const child = spawn('env', ['-u', 'NODE_OPTIONS', node, BUILT_BIN, '--config', configPath], { uid: POD_UID, gid: FS_GROUP, cwd: tmpdir(), env: childEnv({ FORWARD_PROXY_CONFIG: undefined }) })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return outputOf(child)
}

/** The pod's configuration: one user per name, the CA and a secret file from their mounts. */
function proxyJson (root: string, users: Record<string, string>): string {
  return JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    users,
    destinations: LOOPBACK_ORIGINS,
    interception: { hosts: ['never.example'], ca: { cert: join(root, 'ca', 'tls.crt'), key: join(root, 'ca', 'tls.key') } },
    secrets: { api: { file: join(root, 'secrets', 'api-token'), hosts: ['secure.example'] } },
    log: { level: 'info' }
  })
}

/** Lays out the three volumes of a pod (configuration, CA, egress secret); `caKey` overrides the key's mode and group. */
function layOutPod (root: string, ca: CaFixture, caKey: Partial<VolumeFile> = {}): string {
  const stamp = '2026_11_26_10_00_00.000000001'
  const byGroup = (content: string): VolumeFile => ({ content, mode: 0o440, uid: 0, gid: FS_GROUP })
  writeVolume(join(root, 'config'), stamp, { 'proxy.json': byGroup(proxyJson(root, { alice: 'pw-a' })) })
  writeVolume(join(root, 'ca'), stamp, { 'tls.crt': byGroup(ca.cert), 'tls.key': { ...byGroup(ca.key), ...caKey } })
  // 0400 owned by the pod's user: a projected volume with the runtime's user, or a file without fsGroup.
  writeVolume(join(root, 'secrets'), stamp, { 'api-token': { content: 'first-token-value-0001\n', mode: 0o400, uid: POD_UID, gid: POD_UID } })
  return join(root, 'config', 'proxy.json')
}

async function statusThrough (proxyPort: number, url: string, user: string, password: string): Promise<number> {
  const answer = await rawExchange(proxyPort, `GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nProxy-Authorization: ${basic(user, password)}\r\nConnection: close\r\n\r\n`)
  return answer.status
}

const RELOADED = /"reason":"file changed".*"msg":"configuration reloaded"/

test('bin as a non-root pod user: starts on a kubelet Secret layout (..data symlinks, 0440 files of its fsGroup, a 0400 file of its own) and reloads on an atomic swap', { skip: NOT_ROOT }, async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { name: 'Pod CA' })
  const root = podDirectory(t)
  const configPath = layOutPod(root, ca)
  const origin = await startOrigin(t)
  const bin = runAsPod(t, root, configPath)
  const port = portOf((await listeningUrls(bin))[0] ?? '')
  const status = readFileSync(`/proc/${String(bin.child.pid)}/status`, 'utf8')
  t.match(status, new RegExp(`^Uid:\\t${POD_UID}\\t`, 'm'), 'the bin runs as the pod\'s user')
  t.match(status, new RegExp(`^Gid:\\t${FS_GROUP}\\t`, 'm'), 'in the fsGroup')

  const health = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: proxy\r\nConnection: close\r\n\r\n')
  t.equal(health.status, 200, '/healthz answers 200')
  t.equal(await statusThrough(port, `http://127.0.0.1:${origin.port}/a`, 'alice', 'pw-a'), 200, 'alice is served')
  t.equal(await statusThrough(port, `http://127.0.0.1:${origin.port}/b`, 'bob', 'pw-b'), 407, 'bob is not a user yet')

  // A ConfigMap or Secret update: a new timestamped folder, ..data swapped, no signal.
  writeVolume(join(root, 'config'), '2026_11_26_10_05_00.000000002', { 'proxy.json': { content: proxyJson(root, { bob: 'pw-b' }), mode: 0o440, uid: 0, gid: FS_GROUP } })
  await printed(bin, RELOADED, 1)
  t.equal(await statusThrough(port, `http://127.0.0.1:${origin.port}/c`, 'bob', 'pw-b'), 200, 'bob is served after the swap')
  t.equal(await statusThrough(port, `http://127.0.0.1:${origin.port}/d`, 'alice', 'pw-a'), 407, 'alice is gone')

  // The egress secret rotated the same way: a 0400 file of the pod's user in a new folder.
  writeVolume(join(root, 'secrets'), '2026_11_26_10_10_00.000000003', { 'api-token': { content: 'second-token-value-0002\n', mode: 0o400, uid: POD_UID, gid: POD_UID } })
  await printed(bin, RELOADED, 2)
  t.notMatch(bin.stdout(), /reload failed/, 'no reload was refused')
  t.equal(bin.child.exitCode, null, 'still running')
})

test('bin as a non-root pod user: a CA key others may read (0444) is refused, naming the file, the mode and the rule', { skip: NOT_ROOT }, async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { name: 'Pod CA' })
  const root = podDirectory(t)
  const bin = runAsPod(t, root, layOutPod(root, ca, { mode: 0o444 }))
  t.equal(await within(bin.exited, 'exit', 15_000), 1)
  t.equal(bin.stderr(), `forward-proxy: /interception/ca/key: permissions 0444 for the private key "${join(root, 'ca', 'tls.key')}" are too open: others may read, write or run it; it may be readable by the proxy's user, and by the file's group only when the proxy's user is in that group (modes 0600, 0400, 0640, 0440), by nobody else. Run "chmod 600 ${join(root, 'ca', 'tls.key')}" if nobody else could have read it; otherwise treat the key as exposed and replace it\n`)
})

test('bin as a non-root pod user: a 0440 CA key whose group the user is not in is refused, naming that group and the user\'s', { skip: NOT_ROOT }, async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { name: 'Pod CA' })
  const root = podDirectory(t)
  // Owned by the pod's user, so it can read it: only the group makes it too open.
  const bin = runAsPod(t, root, layOutPod(root, ca, { mode: 0o440, uid: POD_UID, gid: OTHER_GROUP }))
  t.equal(await within(bin.exited, 'exit', 15_000), 1)
  t.match(bin.stderr(), `/interception/ca/key: permissions 0440 for the private key "${join(root, 'ca', 'tls.key')}" are too open: its group (gid ${OTHER_GROUP}) may read it, and the proxy's user is not in that group (gids ${FS_GROUP})`)
})
