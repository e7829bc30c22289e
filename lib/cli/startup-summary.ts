import { DEFAULT_LIMITS } from '../options'
import type { InterceptionConfig, ProxyServerConfig } from './config'
import { developmentCaNotice } from './development-ca-notice'
import { estEndpoint } from './est-endpoint'
import type { DevelopmentCaInUse } from './interception-from-config'

/**
 * The human-readable lines printed on start: where it listens and with which HTTP versions
 * (`https://127.0.0.1:8443 (HTTP/1.1 + HTTP/2)`), whether authentication is on
 * (user count only, never a password), the destination policy, the limits, and interception;
 * with a development CA (`developmentCa`), a warning, its path and how clients trust it; the
 * Prometheus endpoint's URL (`metricsUrl`) when there is one.
 */
export function startupSummary (config: ProxyServerConfig, urls: readonly string[], developmentCa?: DevelopmentCaInUse, metricsUrl?: string): string[] {
  const users = Object.keys(config.users ?? {}).length
  const d = config.destinations ?? {}
  const ports = d.allowedPorts === '*' ? 'any port' : `ports ${(d.allowedPorts ?? [80, 443]).join(', ')}`
  const networks = d.allowPrivateNetworks === true
    ? 'private networks ALLOWED'
    : `private networks refused${(d.allowedNetworks ?? []).length > 0 ? ` except ${(d.allowedNetworks ?? []).join(', ')}` : ''}`
  const denied = (d.deniedHosts ?? []).length > 0 ? `; denied hosts ${(d.deniedHosts ?? []).join(', ')}` : ''
  const limits = { ...DEFAULT_LIMITS, ...config.limits }
  return [
    'fastify-forward-proxy',
    ...urls.map((url, i) => `  listening on ${url} (${config.listen[i]?.http2 === true ? 'HTTP/1.1 + HTTP/2' : 'HTTP/1.1'})`),
    users > 0 ? `  authentication: on (Basic, ${users} user${users === 1 ? '' : 's'})` : '  authentication: OFF (anyone who can reach a listener can use the proxy)',
    `  destinations: hosts ${(d.allowedHosts ?? ['*']).join(', ')}${denied}; ${ports}; ${networks}`,
    `  limits: ${limits.maxConcurrentTunnels} tunnels, ${limits.maxConcurrentRequests} forwarded requests in flight, tunnel idle ${limits.tunnelIdleTimeout} ms, http activity ${limits.httpActivityTimeout} ms, connect ${limits.connectTimeout} ms, first byte ${limits.firstByteTimeout} ms, ${limits.maxStreamResets} HTTP/2 stream resets per 10 s`,
    config.interception === undefined ? '  interception: off' : interceptionLine(config.interception, developmentCa),
    ...(developmentCa === undefined ? [] : developmentCaNotice(developmentCa)),
    ...(config.headers === undefined || config.headers.length === 0 ? [] : [`  header rules: ${config.headers.length} (${config.headers.map((rule) => rule.hosts.join(', ')).join('; ')})`]),
    ...(metricsUrl === undefined ? [] : [`  metrics: ${metricsUrl} (Prometheus text format, separate listener)`]),
    '  health check: GET /healthz on every listener'
  ]
}

function interceptionLine (interception: InterceptionConfig, developmentCa: DevelopmentCaInUse): string {
  const hosts = interception.hosts.join(', ')
  if (interception.est !== undefined) {
    return `  interception: ${hosts} (leaves enrolled from EST ${estEndpoint(interception.est)}; clients must trust the EST service's CA)`
  }
  return `  interception: ${hosts} (leaves signed by ${interception.ca?.cert ?? developmentCa?.certPath ?? 'no CA'}; clients must trust that CA)`
}
