import { createSecureContext } from 'node:tls'
import { ConfigError } from './config-error'
import { readConfigFile } from './read-config-file'
import { readKeyFile } from './read-key-file'

/** PEM certificate chain and private key of a TLS listener. */
export interface ListenerTlsFiles {
  cert: Buffer
  key: Buffer
}

/**
 * Reads the PEM files of `listen[index].tls` and checks that they make a usable TLS context
 * (parsable, key matching the certificate, key file readable by its owner only), so start-up fails with the key named rather than
 * with a bare OpenSSL message.
 * @throws ConfigError naming `listen[index].tls.cert`/`.key` or `listen[index].tls`.
 */
export function loadListenerTls (tls: { cert: string, key: string }, index: number): ListenerTlsFiles {
  const files = { cert: readConfigFile(tls.cert, `/listen/${index}/tls/cert`), key: readKeyFile(tls.key, `/listen/${index}/tls/key`) }
  try {
    createSecureContext(files)
  } catch (error) {
    throw new ConfigError(`/listen/${index}/tls: the certificate and key cannot be used together (${(error as Error).message})`)
  }
  return files
}
