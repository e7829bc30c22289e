// The `capture` option as the recorder reads it, checked and with its defaults.

import type { HostPattern } from '../protocol/hosts'

/** Defaults of the `capture` option. */
export const CAPTURE_DEFAULTS = {
  maxBodyBytes: 65_536,
  maxFileBytes: 104_857_600,
  keepFiles: 5,
  redactHeaders: ['authorization', 'cookie', 'set-cookie']
} as const

/** The `capture` option, resolved. */
export interface CaptureSettings {
  /** The HAR file, or null: entries go to `captures()` iterators only. */
  readonly file: string | null
  /** Hosts whose requests are recorded; null: every host. */
  readonly hosts: readonly HostPattern[] | null
  /** Users whose requests are recorded; null: every request. */
  readonly users: ReadonlySet<string> | null
  readonly maxBodyBytes: number
  readonly maxFileBytes: number
  readonly keepFiles: number
  /** Lower-case header names written as `[redacted]` (`proxy-authorization` is never written at all). */
  readonly redactHeaders: ReadonlySet<string>
}

/** True when the file the capture writes to, or how it rotates, differs between `a` and `b`. */
export function changesCaptureFile (a: CaptureSettings | null, b: CaptureSettings | null): boolean {
  return a?.file !== b?.file || a?.maxFileBytes !== b?.maxFileBytes || a?.keepFiles !== b?.keepFiles
}
