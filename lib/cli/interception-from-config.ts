// The configuration's `interception` key turned into plugin options: the CA or EST provider and the
// header rules.

import type { FastifyInstance, FastifyBaseLogger } from 'fastify'
import { createSecureContext } from 'node:tls'
import { tlsInterception } from '../plugin'
import { createReplaceableHostListSelector } from '../interception/host-list-selector'
import { createCaCertificateProvider } from '../certificates/ca-certificate-provider'
import { loadCertificateAuthority } from '../certificates/ca'
import { ForwardProxyCertificateError, ForwardProxyEstError } from '../certificates/errors'
import { openDevelopmentCa, type DevelopmentCa } from '../certificates/development-ca'
import type { ForwardProxyCertificateProvider, TlsInterceptionOptions } from '../../types/interception'
import type { InterceptionConfig, EstConfig } from './config'
import { readConfigFile, readKeyFile } from './config-files'
import { ConfigError } from './config-errors'
import { createEstCertificateProvider } from '../certificates/est-certificate-provider'
import { holdsCertificates } from '../certificates/pem'
import type { ForwardProxyEstCertificateProvider } from '../../types/est'

const TRUSTED_DESTINATION_CA = '/interception/trustedDestinationCa'

/** The development CA in use (without `interception.ca`), or undefined with an operator CA. */
export type DevelopmentCaInUse = Omit<DevelopmentCa, 'provider'> | undefined

/** What {@link registerInterceptionFromConfig} leaves the running server. */
export interface InterceptionFromConfig {
  /** Where the development CA is, when one is used, for the start-up summary. */
  readonly developmentCa: DevelopmentCaInUse
  /** Intercepts these hosts (patterns) from the next CONNECT on: a reload's `interception.hosts`. */
  readonly setHosts: (hosts: readonly string[]) => void
}

/**
 * Registers `tlsInterception` for the configuration file's `interception` key: the built-in
 * host-list selector, a certificate provider (leaves signed by the operator CA of
 * `interception.ca`, enrolled from the EST service of `interception.est`, or, with neither,
 * signed by the development CA of `dataDirectory`, created on first start, refused when
 * `NODE_ENV=production`), and the destination
 * trust, client protocols and handshake timeout given there. The files are read and checked
 * now, so a bad CA or EST setting stops start-up with the key named (never its content). The
 * EST provider's connections are closed with the app.
 * @throws ConfigError naming the key of an unreadable or unusable file.
 */
export async function registerInterceptionFromConfig (
  app: FastifyInstance,
  interception: InterceptionConfig,
  dataDirectory: string
): Promise<InterceptionFromConfig> {
  const { ca, est } = interception
  const development = ca === undefined && est === undefined ? await loadDevelopmentCa(dataDirectory) : undefined
  let certificateProvider: ForwardProxyCertificateProvider
  if (development !== undefined) {
    certificateProvider = development.provider
  } else if (est !== undefined) {
    const provider = createEstProviderFromConfig(est, app.log)
    app.addHook('onClose', async () => { await provider.close() })
    certificateProvider = provider
  } else {
    certificateProvider = loadCaProvider(ca as { cert: string, key: string })
  }
  const { selector, setHosts } = createReplaceableHostListSelector(interception.hosts)
  const options: TlsInterceptionOptions = {
    selector,
    certificateProvider,
    ...(interception.trustedDestinationCa === undefined ? {} : { trustedDestinationCa: readCaFile(interception.trustedDestinationCa, TRUSTED_DESTINATION_CA) }),
    ...(interception.clientProtocols === undefined ? {} : { clientProtocols: interception.clientProtocols }),
    ...(interception.handshakeTimeout === undefined ? {} : { handshakeTimeout: interception.handshakeTimeout }),
    ...(interception.passthroughOnClientRefusal === undefined ? {} : { passthroughOnClientRefusal: interception.passthroughOnClientRefusal })
  }
  await app.register(tlsInterception, options)
  if (development === undefined) return { developmentCa: undefined, setHosts }
  const { provider: _provider, ...files } = development
  // The paths only: the key itself is never logged.
  app.log.warn({ caCert: files.certPath, caKey: files.keyPath, created: files.created }, 'TLS interception uses a DEVELOPMENT CA (not for production); clients must trust its certificate')
  return { developmentCa: files, setHosts }
}

async function loadDevelopmentCa (dataDirectory: string): Promise<DevelopmentCa> {
  // Its key sits unencrypted in the data directory and clients are told to trust it: fine on a
  // developer's machine, never where NODE_ENV says production.
  if (process.env.NODE_ENV === 'production') {
    throw new ConfigError('/interception: the development CA is refused when NODE_ENV=production: configure "interception.ca" (your CA\'s certificate and key files) or "interception.est" (an EST service that issues the leaves)')
  }
  try {
    return await openDevelopmentCa(dataDirectory)
  } catch (error) {
    if (error instanceof ForwardProxyCertificateError) throw new ConfigError(`/interception (development CA): ${error.message.replace(/^fastify-forward-proxy: /, '')}`)
    const code = (error as NodeJS.ErrnoException).code
    if (typeof code === 'string') throw new ConfigError(`/dataDirectory: cannot create or read the development CA in "${dataDirectory}" (${code})`)
    throw error
  }
}

function loadCaProvider (ca: { cert: string, key: string }): ForwardProxyCertificateProvider {
  return asConfigError(() => createCaCertificateProvider(readCaFiles(ca)))
}

/** The operator CA's certificate and key files, read and checked as files (permissions, encryption). */
function readCaFiles (ca: { cert: string, key: string }): { cert: Buffer, key: Buffer } {
  return { cert: readConfigFile(ca.cert, '/interception/ca/cert'), key: readKeyFile(ca.key, '/interception/ca/key') }
}

/** `load()`, its certificate errors naming `/interception/ca` (their messages never hold key material). */
function asConfigError<T> (load: () => T): T {
  try {
    return load()
  } catch (error) {
    if (error instanceof ForwardProxyCertificateError) throw new ConfigError(`/interception/ca: ${error.message.replace(/^fastify-forward-proxy: /, '')}`)
    throw error
  }
}

/**
 * Reads and checks the files `interception` names as start-up does (the CA's certificate and
 * key, the EST client pair and trust, `trustedDestinationCa`) without using them: a reload runs
 * it, since a change to them waits for a restart, which must not then fail on them.
 * @throws ConfigError naming the key of an unreadable or unusable file.
 */
export function checkInterceptionFiles (interception: InterceptionConfig): void {
  if (interception.trustedDestinationCa !== undefined) readCaFile(interception.trustedDestinationCa, TRUSTED_DESTINATION_CA)
  const { ca, est } = interception
  if (ca !== undefined) {
    const files = readCaFiles(ca)
    try {
      asConfigError(() => loadCertificateAuthority(files, Date.now()))
    } finally {
      files.key.fill(0)
    }
  }
  if (est !== undefined) readEstFiles(est).clientKey?.fill(0)
}

/**
 * The files `interception.est` names, read and checked: the client certificate and key (as a
 * pair that works together, the key's permissions), and the CA file of the EST server.
 * @throws ConfigError naming the key of an unreadable or unusable file.
 */
function readEstFiles (est: EstConfig): { clientCert: Buffer | undefined, clientKey: Buffer | undefined, ca: Buffer | undefined } {
  const clientCert = est.clientCert === undefined ? undefined : readConfigFile(est.clientCert, '/interception/est/clientCert')
  const clientKey = est.clientKey === undefined ? undefined : readKeyFile(est.clientKey, '/interception/est/clientKey')
  if (clientCert !== undefined && clientKey !== undefined) checkClientPair(clientCert, clientKey)
  return { clientCert, clientKey, ca: est.ca === undefined ? undefined : readCaFile(est.ca) }
}

/**
 * Creates the EST certificate provider of `interception.est`: reads the client certificate,
 * client key and server CA files it names and checks them now (a key that does not match its
 * certificate or whose permissions are too open, a CA file without a certificate), so start-up
 * fails with the key named. The EST
 * service itself is not contacted before the first intercepted handshake; a failure then fails
 * that handshake (no fallback certificate) and is logged with the EST status.
 * Background renewal failures are logged as warnings. Messages never hold the password or a key.
 * @throws ConfigError naming the key of an unreadable or unusable setting.
 */
function createEstProviderFromConfig (est: EstConfig, log: FastifyBaseLogger): ForwardProxyEstCertificateProvider {
  const { clientCert, clientKey, ca } = readEstFiles(est)
  try {
    return createEstCertificateProvider({
      url: est.url,
      ...(est.label === undefined ? {} : { label: est.label }),
      ...(est.username === undefined ? {} : { username: est.username, password: est.password }),
      ...(clientCert === undefined ? {} : { clientCert, clientKey }),
      ...(ca === undefined ? {} : { ca }),
      ...(est.timeout === undefined ? {} : { timeout: est.timeout }),
      onRenewalError: (host, error) => { log.warn({ host, err: error.message }, 'EST renewal failed; the current leaf is served until it expires') }
    })
  } catch (error) {
    if (error instanceof ForwardProxyEstError) {
      // 'fastify-forward-proxy: option "url" must ...' -> '/interception/est/url: must ...'
      throw new ConfigError(error.message.replace(/^fastify-forward-proxy: option "(\w+)" (.*)$/s, '/interception/est/$1: $2'))
    }
    throw error
  }
}

function checkClientPair (cert: Buffer, key: Buffer): void {
  try {
    createSecureContext({ cert, key })
  } catch (error) {
    // OpenSSL's reason only (e.g. "key values mismatch"); it never quotes the key.
    throw new ConfigError(`/interception/est: clientCert and clientKey cannot be used together (${(error as Error).message})`)
  }
}

function readCaFile (path: string, key = '/interception/est/ca'): Buffer {
  const pem = readConfigFile(path, key)
  if (!holdsCertificates(pem)) {
    throw new ConfigError(`${key}: "${path}" must hold PEM certificates (at least one CERTIFICATE block, each parsable)`)
  }
  return pem
}
