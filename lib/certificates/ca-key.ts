import { createPrivateKey, webcrypto, type KeyObject } from 'node:crypto'
import { ForwardProxyCertificateError } from './certificate-error'

/** Digest used with the CA key for leaf signatures. */
export type SignatureHash = 'SHA-256' | 'SHA-384' | 'SHA-512'

/** The CA key as WebCrypto needs it for PKI.js: non-extractable, sign only. */
export interface CaSigningKey {
  readonly privateKey: webcrypto.CryptoKey
  readonly hash: SignatureHash
}

type ImportAlgorithm = webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams

const EC_CURVES: Readonly<Record<string, { namedCurve: string, hash: SignatureHash }>> = {
  prime256v1: { namedCurve: 'P-256', hash: 'SHA-256' },
  secp384r1: { namedCurve: 'P-384', hash: 'SHA-384' },
  secp521r1: { namedCurve: 'P-521', hash: 'SHA-512' }
}

const MIN_RSA_BITS = 2048

/**
 * Reads the CA private key from PEM: PKCS#8 (encrypted with `passphrase` or not), PKCS#1 RSA
 * or SEC1 EC. Errors say what is wrong without quoting the key, the passphrase or OpenSSL's
 * own message.
 * @throws ForwardProxyCertificateError (`bad_ca_key`).
 */
export function readCaPrivateKey (key: string | Buffer, passphrase: string | Buffer | undefined): KeyObject {
  const text = Buffer.isBuffer(key) ? key.toString('latin1') : key
  if (!/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(text)) {
    throw new ForwardProxyCertificateError('bad_ca_key', 'the CA key is not a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC)')
  }
  const encrypted = text.includes('-----BEGIN ENCRYPTED PRIVATE KEY-----') || /Proc-Type:\s*4,ENCRYPTED/.test(text)
  if (encrypted && (passphrase === undefined || passphrase.length === 0)) {
    throw new ForwardProxyCertificateError('bad_ca_key', 'the CA key is encrypted: give its passphrase')
  }
  try {
    return createPrivateKey({ key: text, format: 'pem', ...(passphrase === undefined ? {} : { passphrase }) })
  } catch {
    throw new ForwardProxyCertificateError('bad_ca_key', encrypted
      ? 'the CA key could not be decrypted with the passphrase given'
      : 'the CA key could not be read as a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC)')
  }
}

/**
 * The import parameters and signature digest for a CA key: RSA (2048 bits or more,
 * PKCS#1 v1.5 with SHA-256) or ECDSA P-256, P-384, P-521 (SHA-256, SHA-384, SHA-512).
 * @throws ForwardProxyCertificateError (`bad_ca_key`) for any other key.
 */
export function caKeyAlgorithm (keyObject: KeyObject): { algorithm: ImportAlgorithm, hash: SignatureHash } {
  const details = keyObject.asymmetricKeyDetails ?? {}
  if (keyObject.asymmetricKeyType === 'rsa') {
    if ((details.modulusLength ?? 0) < MIN_RSA_BITS) {
      throw new ForwardProxyCertificateError('bad_ca_key', `RSA CA keys shorter than ${MIN_RSA_BITS} bits are refused`)
    }
    return { algorithm: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, hash: 'SHA-256' }
  }
  if (keyObject.asymmetricKeyType === 'ec') {
    const curve = EC_CURVES[details.namedCurve ?? '']
    if (curve !== undefined) return { algorithm: { name: 'ECDSA', namedCurve: curve.namedCurve }, hash: curve.hash }
    throw new ForwardProxyCertificateError('bad_ca_key', `the CA key's curve ${String(details.namedCurve)} is not supported (P-256, P-384, P-521)`)
  }
  throw new ForwardProxyCertificateError('bad_ca_key', `CA keys of type ${String(keyObject.asymmetricKeyType)} are not supported (RSA, ECDSA P-256, P-384, P-521)`)
}

/**
 * Imports the CA key into WebCrypto as a non-extractable signing key. The PKCS#8 bytes made
 * on the way are wiped once imported.
 */
export async function importCaSigningKey (keyObject: KeyObject): Promise<CaSigningKey> {
  const { algorithm, hash } = caKeyAlgorithm(keyObject)
  const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'der' })
  try {
    const privateKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, algorithm, false, ['sign'])
    return { privateKey, hash }
  } finally {
    pkcs8.fill(0)
  }
}
