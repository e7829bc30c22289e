import type { FastifyInstance } from 'fastify'
import { tlsInterception } from '../interception-plugin'
import { createHostListSelector } from '../interception/host-list-selector'
import { createCaCertificateProvider } from '../certificates/ca-certificate-provider'
import { ForwardProxyCertificateError } from '../certificates/certificate-error'
import { openDevelopmentCa, type DevelopmentCa } from '../certificates/development-ca-files'
import type { ForwardProxyCertificateProvider, TlsInterceptionOptions } from '../../types/interception'
import { ConfigError } from './config-error'
import { createEstProviderFromConfig } from './est-from-config'
import { readConfigFile } from './read-config-file'
import { readKeyFile } from './read-key-file'
import type { InterceptionConfig } from './config'

/** The development CA in use (without `interception.ca`), or undefined with an operator CA. */
export type DevelopmentCaInUse = Omit<DevelopmentCa, 'provider'> | undefined

/**
 * Registers `tlsInterception` for the configuration file's `interception` key: the built-in
 * host-list selector, a certificate provider (leaves signed by the operator CA of
 * `interception.ca`, enrolled from the EST service of `interception.est`, or, with neither,
 * signed by the development CA of `dataDirectory`, created on first start, refused when
 * `NODE_ENV=production`), and the destination
 * trust, client protocols and handshake timeout given there. The files are read and checked
 * now, so a bad CA or EST setting stops start-up with the key named (never its content). The
 * EST provider's connections are closed with the app.
 * @returns where the development CA is, when one is used, for the start-up summary.
 * @throws ConfigError naming the key of an unreadable or unusable file.
 */
export async function registerInterceptionFromConfig (app: FastifyInstance, interception: InterceptionConfig, dataDirectory: string): Promise<DevelopmentCaInUse> {
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
  const options: TlsInterceptionOptions = {
    selector: createHostListSelector(interception.hosts),
    certificateProvider,
    ...(interception.trustedDestinationCa === undefined ? {} : { trustedDestinationCa: readConfigFile(interception.trustedDestinationCa, '/interception/trustedDestinationCa') }),
    ...(interception.clientProtocols === undefined ? {} : { clientProtocols: interception.clientProtocols }),
    ...(interception.handshakeTimeout === undefined ? {} : { handshakeTimeout: interception.handshakeTimeout })
  }
  await app.register(tlsInterception, options)
  if (development === undefined) return undefined
  const { provider: _provider, ...files } = development
  // The paths only: the key itself is never logged.
  app.log.warn({ caCert: files.certPath, caKey: files.keyPath, created: files.created }, 'TLS interception uses a DEVELOPMENT CA (not for production); clients must trust its certificate')
  return files
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
  const cert = readConfigFile(ca.cert, '/interception/ca/cert')
  const key = readKeyFile(ca.key, '/interception/ca/key')
  try {
    return createCaCertificateProvider({ cert, key })
  } catch (error) {
    // Its messages are written to be safe to show: they never hold key material.
    if (error instanceof ForwardProxyCertificateError) throw new ConfigError(`/interception/ca: ${error.message.replace(/^fastify-forward-proxy: /, '')}`)
    throw error
  }
}
