// What the command line asks for, and the start-up summary printed on start.

import {
  loadConfigFile,
  parseConfig,
  type ProxyServerConfig,
  type InterceptionConfig,
  type EstConfig
} from './config'
import { captureFileOfWorker, type CaptureConfig } from './capture-config'
import { ConfigError } from './config-errors'
import { DEFAULT_LIMITS } from '../core/options'
import { defaultPlaceholder } from '../security/secret-values'
import { CAPTURE_DEFAULTS } from '../capture/capture-settings'
import type { DevelopmentCaInUse } from './interception-from-config'
import { idleMemoryPlan, type ReleaseIdleMemory } from './idle-memory'

/** What the `forward-proxy` command line asks for. */
export interface CommandLine {
  readonly help: boolean
  /** `--config <file>`, else `FORWARD_PROXY_CONFIG`; none means the built-in defaults. */
  readonly configPath?: string
  /** `--host` / `--port`: override the first listener's address (e.g. `--port 0` for a free port). */
  readonly host?: string
  readonly port?: number
  /** `har-repair FILE`: the capture file to repair, instead of starting the proxy. */
  readonly harRepair?: string
}

/**
 * Parses `forward-proxy [--config <file>] [--host <address>] [--port <n>] [--help]`
 * (`--name=value` works too), or `forward-proxy har-repair FILE`.
 * @throws ConfigError for an unknown argument or a missing or bad value.
 */
export function parseCommandLine (args: readonly string[], env: NodeJS.ProcessEnv = process.env): CommandLine {
  if (args[0] === 'har-repair') {
    const file = args[1]
    if (file === undefined || file === '' || args.length > 2) throw new ConfigError('har-repair takes one capture file: forward-proxy har-repair FILE')
    return { help: false, harRepair: file }
  }
  const values: { configPath?: string, host?: string, port?: number } = {}
  if (env.FORWARD_PROXY_CONFIG !== undefined && env.FORWARD_PROXY_CONFIG !== '') values.configPath = env.FORWARD_PROXY_CONFIG
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? ''
    if (arg === '--help' || arg === '-h') return { help: true }
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined]
    if (name !== '--config' && name !== '--host' && name !== '--port') throw new ConfigError(`unknown argument "${arg}" (see --help)`)
    const value = inline ?? args[++i]
    if (value === undefined || value === '') throw new ConfigError(`${name} needs a value`)
    if (name === '--config') values.configPath = value
    else if (name === '--host') values.host = value
    else values.port = portNumber(value)
  }
  return { help: false, ...values }
}

/**
 * The configuration the command line selects: the file (or the built-in defaults) with
 * `--host`/`--port` applied to the first listener.
 * @throws ConfigError when the file cannot be read or breaks the schema.
 */
export function configFromCommandLine (commandLine: CommandLine, cwd: string = process.cwd()): ProxyServerConfig {
  const config = commandLine.configPath === undefined
    ? parseConfig({}, 'built-in defaults', cwd)
    : loadConfigFile(commandLine.configPath)
  const [first, ...others] = config.listen
  if (first === undefined || (commandLine.host === undefined && commandLine.port === undefined)) return config
  return {
    ...config,
    listen: [{ ...first, host: commandLine.host ?? first.host, port: commandLine.port ?? first.port }, ...others]
  }
}

function portNumber (text: string): number {
  const port = Number(text)
  if (!/^\d+$/.test(text) || port > 65535) throw new ConfigError(`--port must be an integer from 0 to 65535, got "${text}"`)
  return port
}

/**
 * The human-readable lines printed on start: where it listens and with which HTTP versions
 * (`https://127.0.0.1:8443 (HTTP/1.1 + HTTP/2)`), whether authentication is on
 * (user count only, never a password, and the users whose `allowedHosts` only report), the
 * destination policy (and whether its host lists only report), the limits, and interception;
 * with a development CA (`developmentCa`), a warning, its path and how clients trust it; the
 * capture file and what it records; the Prometheus endpoint's URL (`metricsUrl`) when there is one.
 */
export function startupSummary (config: ProxyServerConfig, urls: readonly string[], developmentCa?: DevelopmentCaInUse, metricsUrl?: string): string[] {
  const users = Object.keys(config.users ?? {}).length
  const d = config.destinations ?? {}
  const ports = d.allowedPorts === '*' ? 'any port' : `ports ${(d.allowedPorts ?? [80, 443]).join(', ')}`
  const networks = d.allowPrivateNetworks === true
    ? 'private networks ALLOWED'
    : `private networks refused${(d.allowedNetworks ?? []).length > 0 ? ` except ${(d.allowedNetworks ?? []).join(', ')}` : ''}`
  const denied = (d.deniedHosts ?? []).length > 0 ? `; denied hosts ${(d.deniedHosts ?? []).join(', ')}` : ''
  const reporting = d.mode === 'report' ? ' (report mode: host lists logged as would-deny, not enforced)' : ''
  const reportingUsers = Object.entries(config.users ?? {}).filter(([, entry]) => typeof entry === 'object' && entry.mode === 'report').map(([name]) => name)
  const limits = { ...DEFAULT_LIMITS, ...config.limits }
  return [
    'fastify-forward-proxy',
    ...urls.map((url, i) => `  listening on ${url} (${config.listen[i]?.http2 === true ? 'HTTP/1.1 + HTTP/2' : 'HTTP/1.1'})`),
    users > 0 ? `  authentication: on (Basic, ${users} user${users === 1 ? '' : 's'})${reportingUsers.length > 0 ? `; allowedHosts in report mode for ${reportingUsers.join(', ')}` : ''}` : '  authentication: OFF (anyone who can reach a listener can use the proxy)',
    `  destinations: hosts ${(d.allowedHosts ?? ['*']).join(', ')}${denied}${reporting}; ${ports}; ${networks}`,
    `  limits: ${limits.maxConcurrentTunnels} tunnels, ${limits.maxConcurrentRequests} forwarded requests in flight, tunnel idle ${limits.tunnelIdleTimeout} ms, http activity ${limits.httpActivityTimeout} ms, connect ${limits.connectTimeout} ms, first byte ${limits.firstByteTimeout} ms, ${limits.maxStreamResets} HTTP/2 stream resets per 10 s, tunnel set-up wait ${limits.tunnelSetupWait} ms`,
    config.interception === undefined ? '  interception: off' : interceptionLine(config.interception, developmentCa),
    ...(developmentCa === undefined ? [] : developmentCaNotice(developmentCa)),
    ...(config.headers === undefined || config.headers.length === 0 ? [] : [`  header rules: ${config.headers.length} (${config.headers.map((rule) => rule.hosts.join(', ')).join('; ')})`]),
    ...(config.secrets === undefined ? [] : [`  secrets: ${Object.entries(config.secrets).map(([name, secret]) => `${name} (${secret.env === undefined ? 'file' : `$${secret.env}`}, for ${secret.hosts.join(', ')}, placeholder ${secret.placeholder ?? defaultPlaceholder(name)})`).join('; ')}`]),
    ...(config.upstreamProxies === undefined ? [] : [`  upstream proxies: ${upstreamLine(config.upstreamProxies)}`]),
    ...(config.capture === undefined ? [] : [captureLine(config.capture, config.workers ?? 1, users > 0)]),
    ...(metricsUrl === undefined ? [] : [`  metrics: ${metricsUrl} (Prometheus text format, separate listener)`]),
    idleMemoryLine(config.releaseIdleMemory),
    '  health check: GET /healthz on every listener'
  ]
}

/** Whether V8's unused heap goes back to the system after start-up, and after traffic once the proxy is quiet. */
function idleMemoryLine (releaseIdleMemory: ReleaseIdleMemory | undefined): string {
  const plan = idleMemoryPlan(releaseIdleMemory)
  if (plan.keptBecause !== undefined) return `  idle memory: kept (${plan.keptBecause})`
  if (plan.quietBeforeRelease === undefined) return '  idle memory: given back to the system after start-up; kept after traffic'
  return `  idle memory: given back to the system after start-up, and after ${plan.quietBeforeRelease} ms quiet following traffic`
}

function interceptionLine (interception: InterceptionConfig, developmentCa: DevelopmentCaInUse): string {
  const hosts = interception.hosts.length === 0 ? 'the secrets\' hosts only' : interception.hosts.join(', ')
  if (interception.est !== undefined) {
    return `  interception: ${hosts} (leaves enrolled from EST ${estEndpoint(interception.est)}; clients must trust the EST service's CA)`
  }
  return `  interception: ${hosts} (leaves signed by ${interception.ca?.cert ?? developmentCa?.certPath ?? 'no CA'}; clients must trust that CA)`
}

/**
 * The summary's `capture:` line: the file (the pattern of the workers' files with `workers`), the
 * hosts and users recorded, how much of each body, and the rotation; the redacted headers when
 * the file names them.
 */
function captureLine (capture: CaptureConfig, workers: number, authenticated: boolean): string {
  const { maxBodyBytes, maxFileBytes, keepFiles } = { ...CAPTURE_DEFAULTS, ...capture }
  const users = capture.users === undefined ? (authenticated ? ['every user'] : []) : [`users ${capture.users.join(', ')}`]
  const details = [
    ...(workers > 1 ? ['one file per worker, N its cluster id'] : []),
    capture.hosts === undefined ? 'every host' : `hosts ${capture.hosts.join(', ')}`,
    ...users,
    maxBodyBytes === 0 ? 'heads only, no bodies' : `bodies up to ${maxBodyBytes} bytes`,
    `rotated at ${maxFileBytes} bytes, ${keepFiles} kept`,
    ...(capture.redactHeaders === undefined ? [] : [capture.redactHeaders.length === 0 ? 'no headers redacted' : `redacted headers ${capture.redactHeaders.join(', ')}`])
  ]
  return `  capture: ${workers > 1 ? captureFileOfWorker(capture.file, 'N') : capture.file} (${details.join('; ')})`
}

/** Days before the development CA's end from which the start-up summary warns about it. */
const DEVELOPMENT_CA_EXPIRY_WARNING_DAYS = 30
const DAY_MS = 86_400_000

/**
 * The start-up lines about the development CA: a warning that it is for development only with
 * the operator guidance for production, where its certificate is, and one line per kind of client
 * on how to trust it; when it ends within {@link DEVELOPMENT_CA_EXPIRY_WARNING_DAYS} days, a
 * warning saying when and how to replace it. The key's path is shown, never its content.
 */
function developmentCaNotice (ca: NonNullable<DevelopmentCaInUse>, now = Date.now()): string[] {
  const cert = ca.certPath
  return [
    ...expiryWarning(ca, now),
    `  WARNING: TLS interception uses a DEVELOPMENT CA, ${ca.created ? 'created now' : 'reused'} (valid until ${ca.notAfter.toISOString().slice(0, 10)}). Not for production:`,
    `    whoever holds its key (${ca.keyPath}, mode 0600) can impersonate any site to clients that trust it.`,
    '    In production use a dedicated CA ("interception.ca") whose key is kept in a secret store or hardware module,',
    '    intercept only the destinations needed, and inform the people whose traffic is decrypted.',
    `  development CA certificate: ${cert}`,
    '  trust it (curl --cacert, SSL_CERT_FILE and REQUESTS_CA_BUNDLE replace the default roots; NODE_EXTRA_CA_CERTS adds to them):',
    `    curl:     curl --proxy <proxy URL> --cacert ${cert} https://...`,
    `    Node.js:  NODE_EXTRA_CA_CERTS=${cert}`,
    `    OpenSSL:  SSL_CERT_FILE=${cert}`,
    '              (curl reads CURL_CA_BUNDLE before SSL_CERT_FILE: when both are set, CURL_CA_BUNDLE wins)',
    `    Python:   REQUESTS_CA_BUNDLE=${cert}`
  ]
}

/**
 * Leaves are never valid past their CA, so near its end they get shorter and, once it has
 * ended, start-up is refused: say so while there is time to roll a new CA out to clients.
 */
function expiryWarning (ca: NonNullable<DevelopmentCaInUse>, now: number): string[] {
  const left = ca.notAfter.getTime() - now
  if (left >= DEVELOPMENT_CA_EXPIRY_WARNING_DAYS * DAY_MS) return []
  const days = Math.max(0, Math.floor(left / DAY_MS))
  return [
    `  WARNING: the development CA ends on ${ca.notAfter.toISOString().slice(0, 10)} (in ${days} day${days === 1 ? '' : 's'}); the proxy will not start with it after that.`,
    `    To replace it: stop the proxy, remove ${ca.certPath} and ${ca.keyPath}, start again, and make clients trust the new certificate.`
  ]
}

/** Where the leaves come from, for the start-up summary: the EST endpoint, never a credential. */
function estEndpoint (est: EstConfig): string {
  return `${new URL(est.url).origin}/.well-known/est${est.label === undefined ? '' : `/${est.label}`}`
}

/** The upstream rules for the summary, never with their credentials. */
function upstreamLine (upstreams: NonNullable<ProxyServerConfig['upstreamProxies']>): string {
  if (upstreams === 'environment') return 'from HTTPS_PROXY / http_proxy / NO_PROXY'
  return upstreams.map((rule) => {
    if (rule.url === 'direct') return `${rule.hosts.join(', ')} direct`
    const url = new URL(rule.url)
    const credentials = url.username !== '' || url.password !== '' ? ' (with credentials)' : ''
    return `${rule.hosts.join(', ')} via ${url.protocol}//${url.host}${credentials}`
  }).join('; ')
}
