// Live reload of the configuration file: on SIGHUP, and when the file or a secret file changes on
// disk (a Kubernetes ConfigMap or Secret update is a symlink swap that sends no signal). A file
// that fails validation changes nothing.

import { statSync, type Stats } from 'node:fs'
import { stat } from 'node:fs/promises'
import type { FastifyBaseLogger } from 'fastify'
import { isDeepStrictEqual } from 'node:util'
import type { ProxyServerConfig } from './config'
import { ConfigError } from './config-errors'
import { loadListenerTls } from './config-files'
import { checkInterceptionFiles } from './interception-from-config'

/** What a reload applies to: the running server's current configuration and how to change it. */
export interface ReloadTarget {
  /** The configuration in force. */
  readonly current: () => ProxyServerConfig
  /**
   * Applies `next` (whose keys needing a restart already hold their current values) to new
   * requests and tunnels; throws, having changed nothing, when it cannot be served.
   */
  readonly apply: (next: ProxyServerConfig) => void
}

// Keys built into the listeners, the processes, the CA or the logger when the server starts.
const RESTART_KEYS = ['listen', 'allowAnonymous', 'authFailureLimit', 'dataDirectory', 'workers', 'releaseIdleMemory', 'log', 'metrics', 'via', 'redis'] as const
const RESTART_LIMITS = ['httpActivityTimeout', 'firstByteTimeout', 'maxStreamResets'] as const

/**
 * Splits a newly read configuration into what applies now and what needs a restart: returns
 * `next` with every restart-only key set back to its `current` value, and the names of those
 * that differ (`listen`, `interception.ca`, `limits.firstByteTimeout`, ...). Interception's
 * `hosts` apply now; turning interception on or off needs a restart.
 * @throws ConfigError, nothing applied, for a file that turns authentication on or off (`users`
 * emptied or added): a reload must never open the proxy, nor half-apply a file written for one
 * with authentication.
 */
export function splitRestartKeys (current: ProxyServerConfig, next: ProxyServerConfig): { effective: ProxyServerConfig, restartNeeded: string[] } {
  const restartNeeded: string[] = []
  const effective: ProxyServerConfig = { ...next }
  const keep = <K extends keyof ProxyServerConfig>(key: K, name: string = key): void => {
    if (!isDeepStrictEqual(current[key], next[key])) restartNeeded.push(name)
    if (current[key] === undefined) Reflect.deleteProperty(effective, key)
    else effective[key] = current[key]
  }
  for (const key of RESTART_KEYS) keep(key)
  const limits = { ...next.limits }
  for (const key of RESTART_LIMITS) {
    if (current.limits?.[key] !== next.limits?.[key]) restartNeeded.push(`limits.${key}`)
    if (current.limits?.[key] === undefined) Reflect.deleteProperty(limits, key)
    else limits[key] = current.limits[key]
  }
  effective.limits = limits
  if ((current.interception === undefined) !== (next.interception === undefined)) {
    keep('interception')
  } else if (current.interception !== undefined && next.interception !== undefined) {
    const { hosts: _currentHosts, ...currentRest } = current.interception
    const { hosts, ...nextRest } = next.interception
    for (const key of new Set([...Object.keys(currentRest), ...Object.keys(nextRest)])) {
      if (!isDeepStrictEqual(currentRest[key as keyof typeof currentRest], nextRest[key as keyof typeof nextRest])) restartNeeded.push(`interception.${key}`)
    }
    effective.interception = { ...current.interception, hosts }
  }
  // Refused whole rather than half-applied: the rest of such a file was written for a proxy with
  // (or without) authentication, and keeping the old users while applying it would be neither.
  if (hasUsers(current) && !hasUsers(next)) {
    throw new ConfigError('/users: a reload cannot remove every user (that would open the proxy); nothing was applied. Restart the proxy to turn authentication off')
  }
  if (!hasUsers(current) && hasUsers(next)) {
    throw new ConfigError('/users: a reload cannot turn authentication on; nothing was applied. Restart the proxy to apply it')
  }
  return { effective, restartNeeded }
}

function hasUsers (config: ProxyServerConfig): boolean {
  return config.users !== undefined && Object.keys(config.users).length > 0
}

/** Where {@link watchConfiguration} reads the configuration from. */
export interface ConfigurationSource {
  /** The configuration file. */
  readonly path: string
  /** Reads and validates it again (command-line overrides applied). */
  readonly read: () => ProxyServerConfig
}

// Stat polling, not inotify: a ConfigMap swaps a symlink above the file, which inotify on the
// file never reports, while a stat through the link sees the new inode.
const POLL_INTERVAL_MS = 1000
// Editors and `kubectl cp` may write a file in several steps: wait for it to settle.
const SETTLE_MS = 200

/**
 * Reloads the configuration on SIGHUP and whenever the configuration file or a secret file
 * changes (checked every second, following symlinks; a chmod or chown counts). A reload that
 * fails (unreadable or invalid file, missing secret, a secret file others may read, an open
 * proxy) logs one error line, keeps the configuration in force and also watches the secret
 * files the refused file names, so fixing one is picked up; one that succeeds logs the keys that
 * need a restart, if any. Returns a function that stops watching.
 */
export function watchConfiguration (source: ConfigurationSource, target: ReloadTarget, log: FastifyBaseLogger): () => void {
  // What each watched file looked like when the configuration in force was read. Taken here,
  // synchronously: fs.watchFile takes its first look later, on its own, so a change made right
  // after start-up (before that look) would become its starting point and never be reported.
  let watched = new Map<string, string>()
  let settle: NodeJS.Timeout | undefined
  let checking = false
  const check = async (): Promise<void> => {
    if (checking) return
    checking = true
    try {
      for (const [path, seen] of watched) {
        if (await fingerprintNow(path) === seen) continue
        clearTimeout(settle)
        settle = setTimeout(() => reload('file changed'), SETTLE_MS)
        settle.unref()
        return
      }
    } finally {
      checking = false
    }
  }
  const poller = setInterval(() => { void check() }, POLL_INTERVAL_MS)
  poller.unref()
  // A file already watched keeps the look taken before the configuration was read: one taken
  // after it would hide a change made while reading.
  const watch = (paths: readonly string[]): void => {
    watched = new Map(paths.map((path) => [path, watched.get(path) ?? fingerprintSync(path)]))
  }
  const reload = (reason: string): void => {
    // Whatever happens, the files as they are now are the new starting point: a bad file is
    // reported once, not every second, and is read again when it changes.
    watched = new Map([...watched.keys()].map((path) => [path, fingerprintSync(path)]))
    try {
      const next = source.read()
      // A secret file the refused file names (new, or too open) is watched too, so that fixing
      // it (a chmod) is picked up like any other change.
      watch([...watched.keys(), ...secretFilesOf(next)])
      checkRestartFiles(next)
      const { effective, restartNeeded } = splitRestartKeys(target.current(), next)
      target.apply(effective)
      watch(filesOf(source.path, effective))
      log.info({ reload: { reason, file: source.path } }, 'configuration reloaded')
      for (const key of restartNeeded) log.warn({ reload: { key } }, restartNeededMessage(key))
    } catch (error) {
      log.error({ reload: { reason, file: source.path } }, `configuration reload failed, the previous configuration stays: ${(error as Error).message.replace(/^fastify-forward-proxy: /, '')} (${RETRY_HINT})`)
    }
  }
  const onSignal = (): void => reload('SIGHUP')
  process.on('SIGHUP', onSignal)
  watch(filesOf(source.path, target.current()))
  return () => {
    process.removeListener('SIGHUP', onSignal)
    clearTimeout(settle)
    clearInterval(poller)
    watched = new Map()
  }
}

/**
 * Reads and checks the files of settings that wait for a restart (the listeners' certificates
 * and keys, interception's CA, EST and trust files) as start-up would: a reload never accepts a
 * file the next start, or a replacement worker, would refuse.
 * @throws ConfigError naming the key of an unreadable or unusable file.
 */
function checkRestartFiles (config: ProxyServerConfig): void {
  config.listen.forEach((listener, index) => {
    if (listener.tls !== undefined) loadListenerTls(listener.tls, index).key.fill(0)
  })
  if (config.interception !== undefined) checkInterceptionFiles(config.interception)
}

/** The warning for a changed key that applies only once the proxy restarts. */
export function restartNeededMessage (key: string): string {
  return `configuration key "${key}" changed: restart the proxy to apply it (the rest of the file is in force)`
}

// What a failed reload's message says about the next attempt.
const RETRY_HINT = 'the file is read again within about a second of the next change to it or to a secret file, a chmod included, or at once on SIGHUP'

/** The configuration file and the secret files a configuration names: what is watched. */
function filesOf (path: string, config: ProxyServerConfig): string[] {
  return [path, ...secretFilesOf(config)]
}

function secretFilesOf (config: ProxyServerConfig): string[] {
  return Object.values(config.secrets ?? {}).flatMap((secret) => secret.file === undefined ? [] : [secret.file])
}

/**
 * Inode, size, modification time, permission bits and owner of a file, through symlinks;
 * "missing" when it cannot be read. The mode and owner are in it because a secret file is
 * refused for them: a chmod that fixes one changes nothing else.
 */
function fingerprintOf (stats: Stats): string {
  return `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.mode}:${stats.uid}:${stats.gid}`
}

function fingerprintSync (path: string): string {
  try {
    return fingerprintOf(statSync(path))
  } catch {
    return 'missing'
  }
}

async function fingerprintNow (path: string): Promise<string> {
  try {
    return fingerprintOf(await stat(path))
  } catch {
    return 'missing'
  }
}

/**
 * Started without a configuration file there is nothing to re-read, but SIGHUP must not end
 * the process (its default action): it is logged. Returns a function that stops listening.
 */
export function answerReloadWithoutFile (log: FastifyBaseLogger): () => void {
  const onSignal = (): void => { log.warn('SIGHUP: no configuration file to reload (started without --config)') }
  process.on('SIGHUP', onSignal)
  return () => process.removeListener('SIGHUP', onSignal)
}
