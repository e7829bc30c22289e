import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import Ajv, { type ErrorObject } from 'ajv'
import { CONFIG_SCHEMA, NOT_YET_SUPPORTED } from './config-schema'

/** One listener of the configuration file; TLS paths already resolved against the file's folder. */
export interface ListenerConfig {
  host: string
  port: number
  tls?: { cert: string, key: string }
}

/** The configuration file, validated, with defaults applied. */
export interface ProxyServerConfig {
  listen: ListenerConfig[]
  users?: Record<string, string>
  destinations?: {
    allowedHosts?: string[]
    deniedHosts?: string[]
    allowedPorts?: number[] | '*'
    allowPrivateNetworks?: boolean
    allowedNetworks?: string[]
  }
  limits?: { maxConcurrentTunnels?: number, tunnelIdleTimeout?: number, httpActivityTimeout?: number, connectTimeout?: number }
  dataDirectory: string
  log: { level: string }
}

/** The built-in configuration: HTTP/1.1 on 127.0.0.1:8080, no auth, strict policy. */
export const DEFAULT_LISTENER: ListenerConfig = { host: '127.0.0.1', port: 8080 }

/** A configuration problem; the message names the file and the key. */
export class ConfigError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

const validate = new Ajv({ allErrors: false, strict: true }).compile(CONFIG_SCHEMA)

/**
 * Validates a parsed configuration object against the schema and applies defaults.
 * `source` names the file in messages; `baseDirectory` anchors relative paths.
 * @throws ConfigError naming the bad key and what was expected.
 */
export function parseConfig (value: unknown, source: string, baseDirectory: string): ProxyServerConfig {
  rejectNotYetSupported(value, source)
  if (!validate(value)) {
    const errors = validate.errors ?? []
    // A failed oneOf also reports each branch's failure; the oneOf message is the one that helps.
    throw new ConfigError(`${source}: ${describe(errors.find((error) => error.keyword === 'oneOf') ?? errors[0])}`)
  }
  const config = value as Partial<ProxyServerConfig>
  return {
    ...config,
    listen: (config.listen ?? [DEFAULT_LISTENER]).map((listener) => ({
      host: listener.host ?? DEFAULT_LISTENER.host,
      port: listener.port,
      ...(listener.tls === undefined ? {} : { tls: { cert: resolve(baseDirectory, listener.tls.cert), key: resolve(baseDirectory, listener.tls.key) } })
    })),
    dataDirectory: resolve(baseDirectory, config.dataDirectory ?? '.forward-proxy'),
    log: { level: config.log?.level ?? 'info' }
  }
}

/**
 * Reads and validates a configuration file.
 * @throws ConfigError when the file cannot be read, is not JSON, or breaks the schema.
 */
export function loadConfigFile (path: string): ProxyServerConfig {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`${path}: cannot read the configuration file (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new ConfigError(`${path}: not valid JSON (${(error as Error).message})`)
  }
  return parseConfig(value, path, dirname(resolve(path)))
}

function rejectNotYetSupported (value: unknown, source: string): void {
  if (typeof value !== 'object' || value === null) return
  for (const key of ['interception', 'headers']) {
    if (key in value) throw new ConfigError(`${source}: /${key}: ${NOT_YET_SUPPORTED[`/${key}`] ?? 'not supported'}`)
  }
  const listen = (value as { listen?: unknown }).listen
  if (Array.isArray(listen)) {
    listen.forEach((listener: unknown, index) => {
      if (typeof listener === 'object' && listener !== null && 'http2' in listener) {
        throw new ConfigError(`${source}: /listen/${index}/http2: ${NOT_YET_SUPPORTED.http2 ?? 'not supported'}`)
      }
    })
  }
}

function describe (error: ErrorObject | undefined): string {
  if (error === undefined) return 'invalid configuration'
  const where = error.instancePath === '' ? '(top level)' : error.instancePath
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'additionalProperties':
      return `${where}: unknown key "${String(params.additionalProperty)}"`
    case 'required':
      return `${where}: missing required key "${String(params.missingProperty)}"`
    case 'minimum':
    case 'maximum':
    case 'type':
    case 'enum':
    case 'const':
    case 'minLength':
    case 'minItems':
      return `${where} ${error.message ?? 'is invalid'}${error.keyword === 'enum' ? `: ${JSON.stringify(params.allowedValues)}` : ''}`
    case 'oneOf':
      return `${where} must be "*" or an array of port numbers from 1 to 65535`
    default:
      return `${where} ${error.message ?? 'is invalid'}`
  }
}
