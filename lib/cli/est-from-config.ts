import { createSecureContext } from 'node:tls'
import type { FastifyBaseLogger } from 'fastify'
import { createEstCertificateProvider } from '../certificates/est-certificate-provider'
import { ForwardProxyEstError } from '../certificates/est-error'
import { parseCertificates, pemCertificateBlocks } from '../certificates/pem'
import type { ForwardProxyEstCertificateProvider } from '../../types/est'
import { ConfigError } from './config-error'
import type { EstConfig } from './config'
import { readConfigFile } from './read-config-file'
import { readKeyFile } from './read-key-file'

/**
 * Creates the EST certificate provider of `interception.est`: reads the client certificate,
 * client key and server CA files it names and checks them now (a key that does not match its
 * certificate or that group or others may read, a CA file without a certificate), so start-up fails with the key named. The EST
 * service itself is not contacted before the first intercepted handshake; a failure then fails
 * that handshake (no fallback certificate) and is logged with the EST status.
 * Background renewal failures are logged as warnings. Messages never hold the password or a key.
 * @throws ConfigError naming the key of an unreadable or unusable setting.
 */
export function createEstProviderFromConfig (est: EstConfig, log: FastifyBaseLogger): ForwardProxyEstCertificateProvider {
  const clientCert = est.clientCert === undefined ? undefined : readConfigFile(est.clientCert, '/interception/est/clientCert')
  const clientKey = est.clientKey === undefined ? undefined : readKeyFile(est.clientKey, '/interception/est/clientKey')
  if (clientCert !== undefined && clientKey !== undefined) checkClientPair(clientCert, clientKey)
  const ca = est.ca === undefined ? undefined : readCaFile(est.ca)
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

function readCaFile (path: string): Buffer {
  const pem = readConfigFile(path, '/interception/est/ca')
  const blocks = pemCertificateBlocks(pem.toString('latin1'))
  if (blocks.length === 0 || parseCertificates(blocks) === null) {
    throw new ConfigError(`/interception/est/ca: "${path}" must hold PEM certificates (at least one CERTIFICATE block, each parsable)`)
  }
  return pem
}
