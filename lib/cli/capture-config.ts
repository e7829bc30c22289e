// The configuration file's `capture` key: what the schema cannot check, and the file each worker
// writes.

import { statSync } from 'node:fs'
import { dirname, extname } from 'node:path'
import type { ForwardProxyCaptureOptions } from '../../types/capture'
import { compileHostPattern } from '../protocol/hosts'
import { ConfigError } from './config-errors'

/** The `capture` key: the plugin's `capture` option, whose `file` the server requires. */
export interface CaptureConfig extends ForwardProxyCaptureOptions {
  /** The HAR file, absolute; with several workers each writes its own ({@link captureFileOfWorker}). */
  file: string
}

/**
 * The `capture` key beyond the schema: its `file` (the server has no application to read
 * `captures()`, so entries with nowhere to go would be a mistake), each host pattern as the
 * destination lists take it, and each user name one of `users` (the file's).
 * @throws ConfigError naming the first problem, prefixed with `source`.
 */
export function checkCaptureConfig (capture: CaptureConfig | undefined, users: object | undefined, source: string): void {
  if (capture === undefined) return
  if ((capture as Partial<CaptureConfig>).file === undefined) {
    throw new ConfigError(`${source}: /capture: missing required key "file" (the HAR file the entries are written to; the server has no other place to send them)`)
  }
  capture.hosts?.forEach((text, index) => {
    if (compileHostPattern(text) === null) {
      throw new ConfigError(`${source}: /capture/hosts/${index} must be a host pattern: example.com, *.example.com, *, an IP literal or a CIDR range (got ${JSON.stringify(text)})`)
    }
  })
  capture.users?.forEach((name, index) => {
    if (!Object.hasOwn(users ?? {}, name)) {
      throw new ConfigError(`${source}: /capture/users/${index} names the user ${JSON.stringify(name)}, which /users does not define`)
    }
  })
}

/**
 * The folder of the capture file (resolved) exists: otherwise the server would start, say it
 * records, and record nothing.
 * @throws ConfigError naming the folder, prefixed with `source`.
 */
export function checkCaptureFolder (file: string, source: string): void {
  const folder = dirname(file)
  if (statSync(folder, { throwIfNoEntry: false })?.isDirectory() !== true) {
    throw new ConfigError(`${source}: /capture/file: the folder ${folder} does not exist; create it (the file itself is created, with mode 0600)`)
  }
}

/**
 * The capture file of one worker of a `workers` server: processes must never write one file, so
 * `.worker-N` goes before the `.har` extension (`traffic.har` → `traffic.worker-2.har`), or at
 * the end of a name without it (`traffic` → `traffic.worker-2`).
 * @param worker the worker's cluster id, or what the start-up summary shows in its place.
 */
export function captureFileOfWorker (file: string, worker: number | string): string {
  const extension = extname(file)
  return extension.toLowerCase() === '.har'
    ? `${file.slice(0, -extension.length)}.worker-${worker}${extension}`
    : `${file}.worker-${worker}`
}
