import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { tlsInterception } from '../interception-plugin'
import { createHostListSelector } from '../interception/host-list-selector'
import { createCaCertificateProvider } from '../certificates/ca-certificate-provider'
import { ForwardProxyCertificateError } from '../certificates/certificate-error'
import type { ForwardProxyCertificateProvider, TlsInterceptionOptions } from '../../types/interception'
import { ConfigError } from './config-error'
import type { InterceptionConfig } from './config'

/**
 * Registers `tlsInterception` for the configuration file's `interception` key: the built-in
 * host-list selector, a certificate provider backed by the operator CA of `interception.ca`,
 * and the destination trust, client protocols and handshake timeout given there. The CA is
 * read and checked now, so a bad CA stops start-up with the key named (never its content).
 * @throws ConfigError naming the key of an unreadable or unusable file.
 */
export async function registerInterceptionFromConfig (app: FastifyInstance, interception: InterceptionConfig): Promise<void> {
  const ca = interception.ca
  if (ca === undefined) throw new ConfigError('/interception: needs "ca" in this version')
  const options: TlsInterceptionOptions = {
    selector: createHostListSelector(interception.hosts),
    certificateProvider: loadCaProvider(ca),
    ...(interception.trustedDestinationCa === undefined ? {} : { trustedDestinationCa: readFile(interception.trustedDestinationCa, '/interception/trustedDestinationCa') }),
    ...(interception.clientProtocols === undefined ? {} : { clientProtocols: interception.clientProtocols }),
    ...(interception.handshakeTimeout === undefined ? {} : { handshakeTimeout: interception.handshakeTimeout })
  }
  await app.register(tlsInterception, options)
}

function loadCaProvider (ca: { cert: string, key: string }): ForwardProxyCertificateProvider {
  const cert = readFile(ca.cert, '/interception/ca/cert')
  const key = readFile(ca.key, '/interception/ca/key')
  try {
    return createCaCertificateProvider({ cert, key })
  } catch (error) {
    // Its messages are written to be safe to show: they never hold key material.
    if (error instanceof ForwardProxyCertificateError) throw new ConfigError(`/interception/ca: ${error.message.replace(/^fastify-forward-proxy: /, '')}`)
    throw error
  }
}

function readFile (path: string, key: string): Buffer {
  try {
    return readFileSync(path)
  } catch (error) {
    throw new ConfigError(`${key}: cannot read "${path}" (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
}
