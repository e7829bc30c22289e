import { LogController } from 'fastify'
import type { PinoLoggerOptions } from 'fastify/types/logger'
import type { ForwardProxyHeaderRule } from '../../types/header-rules'
import { createPrettyLogStream } from './pretty-log-stream'
import { createBatchedLogStream } from './batched-log-stream'

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
 * pino redaction paths for `headers` objects at the top of an entry and one level down (`req`,
 * `res`, `request`, an error's `headers`...), for the secret headers and for every header the
 * header rules `set` (injected credentials are the operator's secrets, whatever their name).
 */
export function redactedPaths (headerRules: readonly ForwardProxyHeaderRule[] = []): string[] {
  const names = new Set(SECRET_HEADERS)
  for (const rule of headerRules) {
    for (const name of Object.keys(rule.set ?? {})) names.add(name.toLowerCase())
  }
  const paths: string[] = []
  for (const name of names) {
    const key = JSON.stringify(name)
    paths.push(`headers[${key}]`, `*.headers[${key}]`)
  }
  return paths
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
function serializeRequest (request: { method?: string, url?: string, hostname?: string, ip?: string, socket?: { remotePort?: number } }): LoggedRequest {
  return {
    method: request.method,
    url: request.url?.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)[^/?#@]*@/, `$1${REDACTED}@`),
    host: request.hostname,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort
  }
}

/**
 * The bin's Fastify logger: the configured level and format, pino redaction of secret headers
 * and of the headers the header rules inject, and a request serializer without userinfo.
 * Fastify's own per-request lines are turned off: the proxy's access log is the one line per
 * request and per tunnel.
 */
export function proxyLoggerOptions (log: LogConfig, headerRules?: readonly ForwardProxyHeaderRule[]): { logController: LogController, logger: PinoLoggerOptions } {
  return {
    logController: new LogController({ disableRequestLogging: true }),
    logger: {
      level: log.level,
      redact: { paths: redactedPaths(headerRules), censor: REDACTED },
      serializers: { req: serializeRequest },
      // Fastify hands `stream` to pino, though its type for these options does not list it.
      ...{ stream: log.format === 'pretty' ? createPrettyLogStream(process.stdout) : createBatchedLogStream(process.stdout) }
    }
  }
}
