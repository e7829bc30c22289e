// A real redis-server on a free loopback port for the Redis limit store's tests: nothing saved to
// disk, stopped at teardown; killed, paused and restarted on the same port on demand; plain TCP,
// or TLS only when given a certificate.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import type { Test } from 'tap'
import { closedPort } from './closed-port'

/** The redis-server binary: Debian's, else the first on PATH; undefined when there is none. */
export const REDIS_SERVER: string | undefined = findRedisServer()

/** Why tests that need redis-server skip (false when it is installed), for tap's `skip` option. */
export const redisServerMissing: string | false = REDIS_SERVER === undefined ? 'redis-server not installed: apt-get install redis-server' : false

const STARTUP_MS = 10_000

let tlsMissing: string | false | undefined

/**
 * Why tests that need redis-server with TLS skip (false when it has it), for tap's `skip`
 * option. Asks the binary once: a build with TLS fails loading a missing certificate file, one
 * without refuses the `tls-*` directives. Nothing is bound: it exits before listening.
 */
export function redisTlsMissing (): string | false {
  if (tlsMissing !== undefined) return tlsMissing
  if (REDIS_SERVER === undefined) return (tlsMissing = redisServerMissing)
  const missing = join(tmpdir(), 'ffp-redis-tls-probe-missing')
  const probe = spawnSync(REDIS_SERVER, [
    '--port', '0', '--tls-replication', 'yes', '--tls-auth-clients', 'no',
    '--tls-cert-file', join(missing, 'cert.pem'), '--tls-key-file', join(missing, 'key.pem'), '--tls-ca-cert-file', join(missing, 'ca.pem'),
    '--save', '', '--appendonly', 'no'
  ], { encoding: 'utf8', timeout: STARTUP_MS })
  const output = `${probe.stdout ?? ''}${probe.stderr ?? ''}`
  tlsMissing = output.includes('Failed to load certificate') ? false : `${REDIS_SERVER} has no TLS support (built without BUILD_TLS=yes)`
  return tlsMissing
}

/** How {@link startRedisServer} starts redis-server. */
export interface RedisServerOptions {
  /** Requires this password (`--requirepass`). */
  password?: string
  /**
   * Serves TLS only (no plain port), with this certificate and key (paths of PEM files);
   * clients are not asked for certificates. The url is then `rediss://127.0.0.1:<port>/0`.
   */
  tls?: { cert: string, key: string }
}

/** A running redis-server. */
export interface RedisServer {
  readonly port: number
  /** `redis://127.0.0.1:<port>/0` (`rediss://` with TLS), without credentials. */
  readonly url: string
  /** SIGTERM, resolved once it exited. */
  stop: () => Promise<void>
  /** SIGKILL, resolved once it exited: clients see the connection drop. */
  kill: () => Promise<void>
  /** SIGSTOP: connections stay open and nothing answers. */
  pause: () => void
  /** SIGCONT after {@link RedisServer.pause}. */
  resume: () => void
  /** Starts it again (empty) on the same port, after stop or kill. */
  restart: () => Promise<void>
}

/**
 * Starts redis-server (with `--requirepass` when `password` is given; TLS only when `tls` is);
 * killed at teardown.
 */
export async function startRedisServer (t: Test, options: RedisServerOptions = {}): Promise<RedisServer> {
  const binary = REDIS_SERVER
  if (binary === undefined) throw new Error('redis-server not installed: apt-get install redis-server')
  const directory = mkdtempSync(join(tmpdir(), 'ffp-redis-'))
  let child: Running | null = null
  t.teardown(async () => {
    await child?.signal('SIGKILL')
    rmSync(directory, { recursive: true, force: true })
  })
  let port = 0
  // A port found free may be taken before redis-server binds it: try another one.
  for (let attempt = 1; child === null; attempt++) {
    port = await closedPort()
    try {
      child = await run(binary, port, directory, options)
    } catch (error) {
      if (attempt === 3 || !(error instanceof Error) || !error.message.includes('in use')) throw error
    }
  }
  const current = (): Running => {
    if (child === null) throw new Error('redis-server is not running')
    return child
  }
  return {
    port,
    url: `${options.tls === undefined ? 'redis' : 'rediss'}://127.0.0.1:${port}/0`,
    stop: async () => { await current().signal('SIGTERM') },
    kill: async () => { await current().signal('SIGKILL') },
    pause: () => { current().process.kill('SIGSTOP') },
    resume: () => { current().process.kill('SIGCONT') },
    restart: async () => {
      if (child?.process.exitCode === null && child.process.signalCode === null) throw new Error('redis-server is still running')
      child = await run(binary, port, directory, options)
    }
  }
}

/**
 * Resolves once the redis-server (or valkey-server) `child` logs that it accepts connections;
 * rejects, and kills it, when it exits first, fails to spawn or takes longer than 10 s. The
 * rejection names it as `what` and quotes its output.
 */
export async function untilAcceptingConnections (child: ChildProcess, what: string): Promise<void> {
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail('did not start in time'), STARTUP_MS)
    function fail (why: string): void {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(new Error(`${what} ${why}: ${output}`))
    }
    const read = (chunk: Buffer): void => {
      output += chunk.toString()
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout?.on('data', read)
    child.stderr?.on('data', read)
    child.once('error', (error) => fail(error.message))
    child.once('exit', () => fail(`exited${/already in use/.test(output) ? ' (port in use)' : ''}`))
  })
}

/** A started redis-server process. */
interface Running {
  readonly process: ChildProcess
  /** Sends `signal` (SIGCONT first, should it be paused) and waits for the exit. */
  signal: (signal: NodeJS.Signals) => Promise<void>
}

/** Spawns redis-server and resolves once it logs that it accepts connections. */
async function run (binary: string, port: number, directory: string, options: RedisServerOptions): Promise<Running> {
  const { password, tls } = options
  const listen = tls === undefined
    ? ['--port', String(port)]
    : ['--port', '0', '--tls-port', String(port), '--tls-cert-file', tls.cert, '--tls-key-file', tls.key, '--tls-auth-clients', 'no']
  const args = [...listen, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', directory]
  if (password !== undefined) args.push('--requirepass', password)
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await untilAcceptingConnections(child, `redis-server on port ${port}`)
  return {
    process: child,
    signal: async (signal) => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT')
        child.kill(signal)
      }
      await exited
    }
  }
}

function findRedisServer (): string | undefined {
  const candidates = ['/usr/bin/redis-server', ...(process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '').map((dir) => join(dir, 'redis-server'))]
  return candidates.find((candidate) => {
    try {
      accessSync(candidate, constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}
