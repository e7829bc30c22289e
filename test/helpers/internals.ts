/**
 * The package's internals that tests reach beneath the public API (`lib/index`), in one
 * place: when lib/ is regrouped, only these paths change, never the tests.
 */
export { mintDevelopmentCa } from '../../lib/certificates/development-ca'
export { type CachedLeaf, LeafCache, RENEWAL_RETRY_BASE_MS, RENEWAL_RETRY_MAX_MS } from '../../lib/certificates/leaf-cache'
export { isLoopbackHost, type RunningProxyServer, type StartOptions, startProxyServer } from '../../lib/cli/build-server'
export { configFromCommandLine, parseCommandLine, startupSummary } from '../../lib/cli/command-line'
export { CONFIG_SCHEMA } from '../../lib/cli/config-schema'
export { ConfigError, loadConfigFile, parseConfig } from '../../lib/cli/config'
export { HTTP2_MAX_CONCURRENT_STREAMS, HTTP2_RECEIVE_WINDOWS } from '../../lib/cli/http2-listener'
export { createBatchedLogStream, formatPrettyLine, proxyLoggerOptions, REDACTED } from '../../lib/cli/logging'
export { toPrometheusText } from '../../lib/cli/metrics'
export { loadSecrets } from '../../lib/cli/secrets'
export { LINGER_TIMEOUT_MS, secondaryServersOf } from '../../lib/connect/listener'
export { borrowedRelayBuffers, borrowRelayBuffer, createDestinationReader, RELAY_BUFFER_SIZE, returnRelayBuffer } from '../../lib/connect/relay'
export { resolveDestinationTlsSettings, resolveProxySettings } from '../../lib/core/options'
export { parseConnectTarget } from '../../lib/core/proxy-request'
export { receivedHeaderObject } from '../../lib/forward/outgoing-head'
export { formatProxyStatus } from '../../lib/protocol/errors'
export { canonicalHost, cidrContains, compileHostPattern, isEquivalentAuthority, parseCidr, parseIP } from '../../lib/protocol/hosts'
export { classifyAddress, OwnListeners } from '../../lib/security/destination-policy'
export { AuthFailureLimiter, credentialCheckFromUsers } from '../../lib/security/proxy-auth'
export { countConnectRequest, countInterceptedRequest, countInterceptedTunnel, PROXY_METER_VERSION } from '../../lib/telemetry/metrics'
