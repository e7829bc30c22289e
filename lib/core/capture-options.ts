// The `capture` option of forwardProxy, checked and resolved.

import { isAbsolute } from 'node:path'
import type { ForwardProxyCaptureOptions } from '../../types/capture'
import { CAPTURE_DEFAULTS, type CaptureSettings } from '../capture/capture-settings'
import { compileHostPattern, type HostPattern } from '../protocol/hosts'
import { ForwardProxyOptionsError } from '../protocol/errors'

const CAPTURE_KEYS: readonly string[] = ['file', 'hosts', 'users', 'maxBodyBytes', 'maxFileBytes', 'keepFiles', 'redactHeaders']
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * Resolves the `capture` option: null when it is absent (nothing is recorded).
 * @throws ForwardProxyOptionsError naming the first bad field.
 */
export function resolveCaptureSettings (capture: ForwardProxyCaptureOptions | undefined): CaptureSettings | null {
  if (capture === undefined) return null
  if (typeof capture !== 'object' || capture === null || Array.isArray(capture)) throw new ForwardProxyOptionsError('capture', 'must be an object')
  for (const key of Object.keys(capture)) {
    if (!CAPTURE_KEYS.includes(key)) throw new ForwardProxyOptionsError(`capture.${key}`, `is not a known option (known: ${CAPTURE_KEYS.join(', ')})`)
  }
  const { file } = capture
  if (file !== undefined && (typeof file !== 'string' || !isAbsolute(file))) {
    throw new ForwardProxyOptionsError('capture.file', 'must be an absolute path')
  }
  return {
    file: file ?? null,
    hosts: capture.hosts === undefined ? null : hostPatterns(capture.hosts),
    users: capture.users === undefined ? null : new Set(stringList('capture.users', capture.users)),
    maxBodyBytes: integer('capture.maxBodyBytes', capture.maxBodyBytes, CAPTURE_DEFAULTS.maxBodyBytes, 0),
    maxFileBytes: integer('capture.maxFileBytes', capture.maxFileBytes, CAPTURE_DEFAULTS.maxFileBytes, 1024),
    keepFiles: integer('capture.keepFiles', capture.keepFiles, CAPTURE_DEFAULTS.keepFiles, 0),
    redactHeaders: new Set(stringList('capture.redactHeaders', capture.redactHeaders ?? CAPTURE_DEFAULTS.redactHeaders).map((name, index) => {
      if (!HEADER_NAME.test(name)) throw new ForwardProxyOptionsError(`capture.redactHeaders[${index}]`, `is not a header name: ${name}`)
      return name.toLowerCase()
    }))
  }
}

function hostPatterns (hosts: unknown): HostPattern[] {
  return stringList('capture.hosts', hosts).map((text, index) => {
    const pattern = compileHostPattern(text)
    if (pattern === null) throw new ForwardProxyOptionsError(`capture.hosts[${index}]`, `is not a host pattern (example.com, *.example.com, *, an IP literal or a CIDR range): ${text}`)
    return pattern
  })
}

function stringList (option: string, value: unknown): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw new ForwardProxyOptionsError(option, 'must be an array of strings')
  return value
}

function integer (option: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > Number.MAX_SAFE_INTEGER) {
    throw new ForwardProxyOptionsError(option, `must be an integer of at least ${min}: ${String(value)}`)
  }
  return value
}
