import { execFile, spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'tap'
import { BUILT_BIN, listeningUrls, outputOf, runBuiltBin, type BinProcess } from './helpers/cli-bin'
import { childEnv } from './helpers/child-node'
import { LOOPBACK_ORIGINS, portOf } from './helpers/cli-server'
import { closedPort } from './helpers/closed-port'
import { parseDockerfile, type DockerStage } from './helpers/dockerfile'
import { eventually } from './helpers/eventually'
import { basic, rawExchange } from './helpers/raw-client'
import { startOrigin } from './helpers/servers'
import { within } from './helpers/within'

// What deploy/Dockerfile runs, run here without a container: its HEALTHCHECK command, and its
// entrypoint as PID 1 of a PID namespace (what a container is to the kernel).
const ROOT = join(__dirname, '..')
const image = parseDockerfile(readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8')).at(-1) as DockerStage
const run = promisify(execFile)

/** The HEALTHCHECK command's exit code with HEALTHCHECK_URL set to `url`. */
async function healthcheck (url: string): Promise<number> {
  const [command, ...args] = image.healthcheck ?? []
  if (command !== 'node') throw new Error(`the HEALTHCHECK runs ${String(command)}, not node`)
  try {
    await run(process.execPath, args, { env: childEnv({ HEALTHCHECK_URL: url }), timeout: 10_000 })
    return 0
  } catch (error) {
    return (error as { code?: number }).code ?? -1
  }
}

test('deploy/Dockerfile HEALTHCHECK: exits 0 while the bin answers /healthz, 1 when nothing listens or /healthz is not 200', async (t) => {
  t.match(image.env.HEALTHCHECK_URL, /^http:\/\/127\.0\.0\.1:8080\/healthz$/, 'the image sets the URL of the default listener')
  const bin = runBuiltBin(t, ['--port', '0'])
  const url = (await listeningUrls(bin))[0] ?? ''
  t.equal(await healthcheck(`${url.replace(/\/$/, '')}/healthz`), 0, 'healthy')
  t.equal(await healthcheck(`http://127.0.0.1:${await closedPort()}/healthz`), 1, 'nothing listening')
  const failing = createServer((_req, res) => { res.statusCode = 503; res.end() })
  await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { failing.close() })
  const address = failing.address()
  t.equal(await healthcheck(`http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/healthz`), 1, 'a 503')
})

const NOT_ROOT = process.getuid?.() !== 0 ? 'a PID namespace needs root (CI runs as root)' : false

/** The host PID of the process unshare started (PID 1 inside the namespace). */
function namespaceInit (unsharePid: number): number {
  const children = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8').trim()
  return Number(children.split(' ')[0])
}

test('deploy/Dockerfile entrypoint as PID 1: SIGHUP from outside reloads the configuration, SIGTERM closes gracefully with exit 0', { skip: NOT_ROOT }, async (t) => {
  const origin = await startOrigin(t)
  const file = join(t.testdir(), 'proxy.json')
  const config = (users: Record<string, string>): string => JSON.stringify({ listen: [{ host: '127.0.0.1', port: 0 }], users, destinations: LOOPBACK_ORIGINS, log: { level: 'info' } })
  writeFileSync(file, config({ alice: 'pw-a' }))
  const [node, ...entrypointArgs] = image.entrypoint ?? []
  t.equal(node, 'node')
  t.equal(join(ROOT, entrypointArgs.at(-1) ?? ''), BUILT_BIN, 'the entrypoint runs the built bin')
  // env(1) drops the process-info hook that tap's spawn wrapper puts back into NODE_OPTIONS.
  const child = spawn('unshare', ['--pid', '--fork', '--kill-child', 'env', '-u', 'NODE_OPTIONS', process.execPath, ...entrypointArgs, '--config', file], { cwd: ROOT, env: childEnv({ FORWARD_PROXY_CONFIG: undefined }) })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const bin: BinProcess = outputOf(child)
  const port = portOf((await listeningUrls(bin))[0] ?? '')
  const pid = namespaceInit(child.pid ?? 0)
  t.match(readFileSync(`/proc/${pid}/status`, 'utf8'), /^NSpid:\t\d+\t1$/m, 'node is PID 1 in its namespace')

  writeFileSync(file, config({ bob: 'pw-b' }))
  process.kill(pid, 'SIGHUP')
  await within(eventually(() => /"reason":"SIGHUP".*"msg":"configuration reloaded"/.test(bin.stdout()), 10_000), 'the SIGHUP reload', 11_000)
  const status = await rawExchange(port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nProxy-Authorization: ${basic('bob', 'pw-b')}\r\nConnection: close\r\n\r\n`)
  t.equal(status.status, 200, 'the reloaded users are in force')

  process.kill(pid, 'SIGTERM')
  t.equal(await within(bin.exited, 'exit after SIGTERM', 15_000), 0, 'closed gracefully, exit 0')
  t.match(bin.stdout(), /"signal":"SIGTERM".*"msg":"shutting down"/)
})
