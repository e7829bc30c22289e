// The bundled server's logs: logger options with redaction of secret headers, JSON lines batched
// (a few milliseconds at most), and the pretty format.

import { LogController } from 'fastify'
import type { PinoLoggerOptions } from 'fastify/types/logger'
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { Writable } from 'node:stream'
import type { ForwardProxyHeaderRule } from '../../types/header-rules'
import type { AccessLineWriter } from '../telemetry/access-line'

/** The `log` key of the configuration file, defaults applied. */
export interface LogConfig {
  level: string
  /** `json`: one JSON object per line (pino's own); `pretty`: one readable line per entry. */
  format: 'json' | 'pretty'
}

/** What the bin's logger must never write out. */
export const REDACTED = '[redacted]'

// Headers that hold credentials or session state, wherever a log entry carries headers.
const SECRET_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key']

/**
 * The names of the headers no log line may show: the secret headers, and every header the header
 * rules `set` (injected credentials are the operator's secrets, whatever their name). Lower case.
 */
function redactedHeaderNames (headerRules: readonly ForwardProxyHeaderRule[] = []): ReadonlySet<string> {
  const names = new Set(SECRET_HEADERS)
  for (const rule of headerRules) {
    for (const name of Object.keys(rule.set ?? {})) names.add(name.toLowerCase())
  }
  return names
}

// Serialized by the bin's serializers, which never write headers: left as they are.
const SERIALIZED_WITHOUT_HEADERS = new Set(['req', 'res'])

/**
 * pino's `formatters.log`: the value of every header named in `names` (in any case) becomes
 * {@link REDACTED} in a `headers` object at the top of an entry and one level down (`upstream`,
 * `response`, an error's `headers`...), in copies: the objects logged are never changed. An
 * error stays an error (its message, stack and type are logged as usual). This replaces pino's
 * `redact` option, whose wildcard paths (`*.headers[...]`) ran on every line, the access line of
 * every request included, for about 7% of the bin's CPU per `http://` request; here a line with
 * no `headers` costs a look at its top-level keys.
 */
function redactSecretHeaders (names: ReadonlySet<string>): (entry: Record<string, unknown>) => Record<string, unknown> {
  const censored = (headers: unknown): Record<string, unknown> | undefined => {
    if (typeof headers !== 'object' || headers === null) return undefined
    let copy: Record<string, unknown> | undefined
    for (const name of Object.keys(headers)) {
      if (!names.has(name.toLowerCase())) continue
      copy ??= { ...headers }
      copy[name] = REDACTED
    }
    return copy
  }
  return (entry) => {
    let result = entry
    const top = censored(entry.headers)
    if (top !== undefined) result = { ...entry, headers: top }
    for (const key of Object.keys(entry)) {
      const value = entry[key]
      if (typeof value !== 'object' || value === null || SERIALIZED_WITHOUT_HEADERS.has(key)) continue
      const headers = censored((value as { headers?: unknown }).headers)
      if (headers === undefined) continue
      if (result === entry) result = { ...entry }
      result[key] = withHeaders(value, headers)
    }
    return result
  }
}

/**
 * A copy of `value` with `headers` in place of its own: an error with its prototype and own
 * properties, anything else as its own enumerable properties (what the line would show).
 */
function withHeaders (value: object, headers: Record<string, unknown>): object {
  if (value instanceof Error) {
    const descriptors = Object.getOwnPropertyDescriptors(value)
    // Since Node 21 (V8 12), an error's own `stack` is an accessor that reads a slot only the
    // original error has: copied as it is, the copy's stack would read undefined and the line
    // would lose it. The copy gets the stack's text instead.
    const stack = descriptors.stack
    if (stack !== undefined && stack.get !== undefined) {
      descriptors.stack = { value: value.stack, enumerable: stack.enumerable ?? false, writable: true, configurable: true }
    }
    const copy = Object.create(Object.getPrototypeOf(value), descriptors) as Record<string, unknown>
    Object.defineProperty(copy, 'headers', { value: headers, enumerable: true, writable: true, configurable: true })
    return copy
  }
  return { ...value, headers }
}

/** A request as the bin logs it: never its headers, and the target without any userinfo. */
interface LoggedRequest {
  [key: string]: unknown
  method?: string
  url?: string
  host?: string
  remoteAddress?: string
  remotePort?: number
}

/**
 * Fastify's request serializer minus anything secret: an absolute-form target's userinfo
 * (`http://user:password@host/`) is replaced, since a client may put credentials there.
 */
function serializeRequest (request: {
  method?: string
  url?: string
  originalUrl?: string
  hostname?: string
  ip?: string
  socket?: { remotePort?: number }
}): LoggedRequest {
  return {
    method: request.method,
    // The target as received: a CONNECT's url is the path it is routed under.
    url: (request.originalUrl ?? request.url)?.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)[^/?#@]*@/, `$1${REDACTED}@`),
    host: request.hostname,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort
  }
}

/**
 * The bin's Fastify logger: the configured level and format, redaction of secret headers and of
 * the headers the header rules inject ({@link redactSecretHeaders}), and a request serializer
 * without userinfo. Fastify's own per-request lines are turned off: the proxy's access log is
 * the one line per request and per tunnel, written by `accessLineWriter` (to be installed on
 * the app's logger with `writeAccessLinesWith`). Request ids come from
 * {@link createRequestIdGenerator}.
 */
export function proxyLoggerOptions (
  log: LogConfig,
  headerRules?: readonly ForwardProxyHeaderRule[],
  target: LogTarget & NodeJS.WritableStream = process.stdout
): { logController: LogController, logger: PinoLoggerOptions, genReqId: () => string, accessLineWriter: AccessLineWriter } {
  const stream = log.format === 'pretty' ? createPrettyLogStream(target) : createBatchedLogStream(target)
  const base = { pid: process.pid, hostname: hostname() }
  return {
    genReqId: createRequestIdGenerator(),
    logController: new LogController({ disableRequestLogging: true }),
    logger: {
      level: log.level,
      base,
      formatters: { log: redactSecretHeaders(redactedHeaderNames(headerRules)) },
      serializers: { req: serializeRequest },
      // Fastify hands `stream` to pino, though its type for these options does not list it.
      ...{ stream }
    },
    accessLineWriter: createAccessLineWriter(stream, base)
  }
}

/**
 * The line pino writes for `request.log.info({ access }, message)` under the options above, as
 * one JSON.stringify of the whole line (one string, where pino concatenates a dozen pieces):
 * level 30, pino's `time` (milliseconds since the epoch), the base bindings, Fastify's `reqId`
 * binding, then `access` and `msg`, in pino's order. The formatters have nothing to do on it
 * (an access line carries no headers). It goes to the same stream as pino's lines, so the
 * order of lines is kept. test/cli-access-line-as-pino-writes-it.test.ts compares the two.
 */
function createAccessLineWriter (stream: LogTarget, base: { pid: number, hostname: string }): AccessLineWriter {
  const { pid, hostname } = base
  return (request, access, msg) => {
    stream.write(`${JSON.stringify({ level: 30, time: Date.now(), pid, hostname, reqId: request.id, access, msg })}\n`)
  }
}

/**
 * Fastify's `genReqId` for the bin: `req-<prefix>-<counter>`, with a prefix drawn at random once
 * per process (8 hex digits) and the counter in base 36. Fastify's default counts from `req-1`
 * in every process, so the workers of one server (and replicas, and restarts) logged the same
 * ids; the prefix tells them apart for the cost of the default, one string per request.
 */
function createRequestIdGenerator (prefix: string = randomBytes(4).toString('hex')): () => string {
  const start = `req-${prefix}-`
  let next = 0
  return () => {
    // Kept a small integer (V8 SMI), as Fastify's default does.
    next = (next + 1) & 0x7fffffff
    return start + next.toString(36)
  }
}

/** Where the batched stream writes: `process.stdout` in the bin. */
interface LogTarget {
  write (text: string): unknown
}

/** A destination for pino's `stream` option that writes its lines in batches. */
interface BatchedLogStream {
  /** Called by pino with one serialized line. */
  write (line: string): boolean
  /** Writes what is pending now (process exit, or a message that must follow the lines before it). */
  flushSync (): void
}

/**
 * Collects log lines and writes them to `target` in batches: at most {@link BATCH_DELAY_MS}
 * after the first line of a batch, or at once when {@link BATCH_BYTES} are pending. pino's
 * default destination hands each line to libuv's thread pool as its own asynchronous write:
 * with one access line per request that was about half of what the access log costs (in the
 * benchmark, the bin's CPU per http:// request was 31 µs above its figure at log level warn,
 * 15 µs with a write per event-loop turn). A write per turn still wrote a few lines at a time
 * under load; a write costs about a microsecond whatever it carries, so lines now wait a few
 * milliseconds for company (as Squid's access log buffers its lines). Lines keep their order,
 * and what is pending is written at exit too (`process.stdout` writes are synchronous for files
 * and pipes on Linux). A process killed with SIGKILL loses at most the last few milliseconds.
 */
export function createBatchedLogStream (target: LogTarget): BatchedLogStream {
  let pending: string[] = []
  let pendingBytes = 0
  let timer: NodeJS.Timeout | undefined
  const flushSync = (): void => {
    unflushed.delete(flushSync)
    if (timer !== undefined) {
      clearTimeout(timer)
      timer = undefined
    }
    if (pending.length === 0) return
    const text = pending.length === 1 ? pending[0] : pending.join('')
    pending = []
    pendingBytes = 0
    target.write(text as string)
  }
  return {
    write (line: string): boolean {
      pending.push(line)
      pendingBytes += line.length
      if (pendingBytes >= BATCH_BYTES) {
        flushSync()
      } else if (timer === undefined) {
        watchExit()
        unflushed.add(flushSync)
        timer = setTimeout(flushSync, BATCH_DELAY_MS)
        // The exit handler writes what is pending: a batch never keeps the process alive.
        timer.unref()
      }
      return true
    },
    flushSync
  }
}

/** Longest a log line waits in a batch, in milliseconds. */
const BATCH_DELAY_MS = 10

/** Pending characters that make a batch go out at once (a line is about 300). */
const BATCH_BYTES = 64 * 1024

/** The flushes of the streams holding lines, run at exit: one listener for every stream of the process. */
const unflushed = new Set<() => void>()
let watchingExit = false

function watchExit (): void {
  if (watchingExit) return
  watchingExit = true
  process.once('exit', () => { for (const flush of [...unflushed]) flush() })
}

const LEVELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' }
// pino's bookkeeping fields, shown in the line's head or not at all.
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v'])

/**
 * Formats one pino JSON line for a person: `2026-11-23T09:00:00.000Z INFO  message key=value`,
 * nested objects flattened with dots (`access.status=200`). A line that is not JSON passes
 * through unchanged. Redaction has already happened: this sees what pino would have written.
 */
export function formatPrettyLine (line: string): string {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(line) as Record<string, unknown>
  } catch {
    return line
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString() : ''
  const level = (LEVELS[Number(entry.level)] ?? String(entry.level)).padEnd(5)
  const fields: string[] = []
  for (const [key, value] of Object.entries(entry)) {
    if (!OMITTED.has(key)) flatten(key, value, fields)
  }
  const message = typeof entry.msg === 'string' ? entry.msg : ''
  return [time, level, message, ...fields].filter((part) => part !== '').join(' ')
}

function flatten (key: string, value: unknown, out: string[]): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [inner, innerValue] of Object.entries(value)) flatten(`${key}.${inner}`, innerValue, out)
    return
  }
  out.push(`${key}=${typeof value === 'string' && !/[\s"=]/.test(value) && value !== '' ? value : JSON.stringify(value)}`)
}

/** A stream for pino's `stream` option that writes each entry to `target` as a readable line. */
function createPrettyLogStream (target: NodeJS.WritableStream): Writable {
  let pending = ''
  return new Writable({
    write (chunk: Buffer, _encoding, callback) {
      const text = pending + chunk.toString()
      const lines = text.split('\n')
      pending = lines.pop() ?? ''
      const out = lines.filter((line) => line !== '').map((line) => `${formatPrettyLine(line)}\n`).join('')
      if (out === '') callback()
      else target.write(out, () => callback())
    }
  })
}
