// The files the configuration file names: read whole, private ones refused when others may read
// them, and a TLS listener's certificate and key checked together. Every error names the key that
// names the file, never the file's content.

import { readFileSync } from 'node:fs'
import { createSecureContext } from 'node:tls'
import { KEY_FILE_RULE, octalMode, tooOpenKeyFile, type TooOpenKeyFile } from '../certificates/pem'
import { ConfigError } from './config-errors'

/**
 * Reads a file named by the configuration (a certificate, a key, a CA bundle), whole.
 * @param key the configuration key that names the file, e.g. `/interception/ca/key`.
 * @throws ConfigError naming the key, the path and the error code, never the file's content.
 */
export function readConfigFile (path: string, key: string): Buffer {
  try {
    return readFileSync(path)
  } catch (error) {
    throw new ConfigError(`${key}: cannot read "${path}" (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
}

/**
 * Reads a private key file named by the configuration (a TLS listener's key, the interception
 * CA's key, the EST client key) and refuses it when others may read it, or a group the proxy's
 * user is not in (the rule of `tooOpenKeyFile`): such a key may already be in other hands. An
 * encrypted key is refused too: the configuration holds no passphrase for it.
 * @param key the configuration key that names the file, e.g. `/listen/0/tls/key`.
 * @throws ConfigError naming the key, the path and the mode (or the read error), never the file's content.
 */
export function readKeyFile (path: string, key: string): Buffer {
  const content = readPrivateFile(path, key, { file: 'private key', thing: 'key' })
  // The file gives no passphrase to read an encrypted key with: say so, rather than let
  // OpenSSL's "bad decrypt" or "give its passphrase" send the operator looking for one.
  if (ENCRYPTED_PEM.test(content.toString('latin1'))) {
    content.fill(0)
    throw new ConfigError(`${key}: the private key "${path}" is encrypted; the server reads unencrypted PEM keys only (decrypt it into a file readable by the proxy's user alone, mode 0600 or 0400)`)
  }
  return content
}

/** A PKCS#8 encrypted key, or a traditional PEM key with an encryption header. */
const ENCRYPTED_PEM = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type:\s*4,ENCRYPTED/

/**
 * Reads a file only the proxy's user (and its own groups) may read (a private key, a secret):
 * refused, and the bytes read wiped, when `tooOpenKeyFile` refuses its permissions.
 * @param names how the message calls the file and what it holds.
 * @throws ConfigError naming the key, the path and the mode (or the read error), never the content.
 */
export function readPrivateFile (path: string, key: string, names: { readonly file: string, readonly thing: string }): Buffer {
  const content = readConfigFile(path, key)
  let tooOpen: TooOpenKeyFile | undefined
  try {
    tooOpen = tooOpenKeyFile(path)
  } catch (error) {
    content.fill(0)
    throw new ConfigError(`${key}: cannot read "${path}" (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  if (tooOpen !== undefined) {
    content.fill(0)
    throw new ConfigError(`${key}: permissions ${octalMode(tooOpen.mode)} for the ${names.file} "${path}" are too open: ${tooOpen.reason}; ${KEY_FILE_RULE}. Run "chmod 600 ${path}" if nobody else could have read it; otherwise treat the ${names.thing} as exposed and replace it`)
  }
  return content
}

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
