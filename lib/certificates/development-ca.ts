// The development CA: minted on first start, kept in the data directory, reused while valid.

import { webcrypto, randomBytes, X509Certificate } from 'node:crypto'
import { hostname as osHostname } from 'node:os'
import {
  chmodSync,
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync
} from 'node:fs'
import { join } from 'node:path'
import { EXTENSION_OID, keyIdentifierOf, randomSerialNumber } from './leaf'
import { commonNameOnly, signCertificate, type CertificateExtension } from './certificate-writer'
import { subjectPublicKeyBitsOf } from './certificate-fields'
import { derBitString, derContext, derOctetString, derSequence, derSmallInteger, derTrue } from './der-writer'
import { derToPem, KEY_FILE_RULE, octalMode, tooOpenKeyFile } from './pem'
import type { ForwardProxyCaCertificateProvider } from '../../types/certificates'
import { createCaCertificateProvider } from './ca-certificate-provider'
import { ForwardProxyCertificateError } from './errors'

const MINUTE_MS = 60_000

/** Defaults of {@link mintDevelopmentCa}. */
const DEVELOPMENT_CA_DEFAULTS = {
  /** How far in the past the CA's validity starts, for clocks slightly behind (ms). */
  backdateMs: 5 * MINUTE_MS,
  /** How long the CA is valid from `now` (ms): one year. */
  lifetimeMs: 365 * 24 * 60 * MINUTE_MS
} as const

/** What {@link mintDevelopmentCa} needs; every field has a default. */
export interface DevelopmentCaOptions {
  /** Milliseconds since the epoch taken as now (default `Date.now()`). */
  readonly now?: number
  /** Machine name shown in the CA's common name (default `os.hostname()`). */
  readonly hostname?: string
  /** Validity from `now` in milliseconds (default one year). */
  readonly lifetimeMs?: number
}

/** A freshly minted development CA, PEM. `key` is the private key: never log it. */
export interface DevelopmentCaMaterial {
  /** The self-signed CA certificate. */
  readonly cert: string
  /** The unencrypted PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`). */
  readonly key: string
  /** The certificate's common name. */
  readonly commonName: string
  readonly notBefore: Date
  readonly notAfter: Date
}

/**
 * Mints a self-signed development CA over Node's WebCrypto: an ECDSA P-256 key,
 * basicConstraints cA true with pathLen 0 (critical), keyUsage keyCertSign and cRLSign
 * (critical), subject and authority key identifiers, a random positive serial, and a common
 * name saying what it is (`fastify-forward-proxy development CA (<host>, <date>)`). Valid from
 * five minutes before `now` for a year.
 *
 * For development only: the key is returned as PEM so it can be stored; whoever holds it can
 * impersonate any site to clients that trust the certificate.
 */
export async function mintDevelopmentCa (options: DevelopmentCaOptions = {}): Promise<DevelopmentCaMaterial> {
  const now = options.now ?? Date.now()
  const notBefore = new Date(now - DEVELOPMENT_CA_DEFAULTS.backdateMs)
  const notAfter = new Date(now + (options.lifetimeMs ?? DEVELOPMENT_CA_DEFAULTS.lifetimeMs))
  const commonName = `fastify-forward-proxy development CA (${options.hostname ?? osHostname()}, ${new Date(now).toISOString().slice(0, 10)})`

  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])
  const spki = new Uint8Array(await webcrypto.subtle.exportKey('spki', keys.publicKey))
  const keyIdentifier = keyIdentifierOf(subjectPublicKeyBitsOf(spki))
  const name = commonNameOnly(commonName)
  const der = await signCertificate({
    serialNumber: randomSerialNumber(),
    issuer: name,
    subject: name,
    notBefore,
    notAfter,
    subjectPublicKeyInfo: spki,
    extensions: caExtensions(keyIdentifier)
  }, { privateKey: keys.privateKey, hash: 'SHA-256' })
  const pkcs8 = new Uint8Array(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey))
  try {
    return { cert: derToPem(der, 'CERTIFICATE'), key: derToPem(pkcs8, 'PRIVATE KEY'), commonName, notBefore, notAfter }
  } finally {
    pkcs8.fill(0)
  }
}

/** basicConstraints (critical, cA, pathLen 0), keyUsage (critical), subject and authority key identifiers. */
function caExtensions (keyIdentifier: Uint8Array): CertificateExtension[] {
  // Named bits: keyCertSign is bit 5 (0x04), cRLSign bit 6 (0x02); bit 7 unused.
  const keyUsage = derBitString(Uint8Array.of(0x06), 1)
  return [
    { oid: EXTENSION_OID.basicConstraints, critical: true, value: derSequence(derTrue(), derSmallInteger(0)) },
    { oid: EXTENSION_OID.keyUsage, critical: true, value: keyUsage },
    { oid: EXTENSION_OID.subjectKeyIdentifier, critical: false, value: derOctetString(keyIdentifier) },
    { oid: EXTENSION_OID.authorityKeyIdentifier, critical: false, value: derSequence(derContext(0, false, keyIdentifier)) }
  ]
}

/** File names of the development CA inside the data directory. */
const DEVELOPMENT_CA_FILES = { cert: 'ca.pem', key: 'ca.key' } as const

const DIRECTORY_MODE = 0o700
const KEY_MODE = 0o600
const CERT_MODE = 0o644

/** The development CA in use, and where it lives. Holds no key material. */
export interface DevelopmentCa {
  /** Leaves signed by the development CA, as `createCaCertificateProvider` makes them. */
  readonly provider: ForwardProxyCaCertificateProvider
  /** Absolute path of the CA certificate: what clients must trust. */
  readonly certPath: string
  /** Absolute path of the CA private key (mode 0600). */
  readonly keyPath: string
  /** True when this call created the CA, false when it reused the files of an earlier start. */
  readonly created: boolean
  /** The CA certificate's validity end. */
  readonly notAfter: Date
}

/**
 * The development CA of `dataDirectory` (`ca.pem`, `ca.key`): created on first use, reused
 * afterwards. Creating makes the directory with mode 0700, writes the key with mode 0600 to a
 * temporary file linked into place (never readable by others, never clobbering a file another
 * process put there meanwhile), then the certificate with mode 0644. An existing data directory
 * must belong to the proxy's user and be writable by it alone; reusing refuses files another
 * user owns and a key file others, or a group the proxy's user is not in, may read (see
 * `tooOpenKeyFile`), and loads the pair through `createCaCertificateProvider`'s checks. Existing files are never overwritten: a CA clients
 * may already trust is replaced only by the operator.
 * @throws ForwardProxyCertificateError (`bad_ca_key` for a key file that is too open or another
 * user's, or a data directory another user owns or may write,
 * `bad_ca_certificate` for one file without the other, or the provider's own reasons for an
 * expired or unusable CA), its message saying which files to remove. Messages never hold key
 * material.
 */
export async function openDevelopmentCa (dataDirectory: string, options: DevelopmentCaOptions = {}): Promise<DevelopmentCa> {
  const certPath = join(dataDirectory, DEVELOPMENT_CA_FILES.cert)
  const keyPath = join(dataDirectory, DEVELOPMENT_CA_FILES.key)
  if (exists(dataDirectory)) checkDirectory(dataDirectory)
  const certExists = exists(certPath)
  const keyExists = exists(keyPath)
  let created = false
  if (!certExists && !keyExists) {
    await createFiles(dataDirectory, certPath, keyPath, options)
    created = true
  } else if (!certExists || !keyExists) {
    throw new ForwardProxyCertificateError('bad_ca_certificate', `the development CA in ${dataDirectory} is incomplete: ${certExists ? keyPath : certPath} is missing. Remove ${certExists ? certPath : keyPath} to have a new development CA created (clients must then trust the new ${DEVELOPMENT_CA_FILES.cert})`)
  }
  checkOwner(keyPath, 'the development CA key')
  checkOwner(certPath, 'the development CA certificate')
  checkKeyFileMode(keyPath)
  const cert = readFileSync(certPath)
  const key = readFileSync(keyPath)
  try {
    const provider = createCaCertificateProvider({ cert, key })
    // The provider checked the certificate; parsed again for its end date only.
    return { provider, certPath, keyPath, created, notAfter: new Date(new X509Certificate(cert).validTo) }
  } catch (error) {
    if (!(error instanceof ForwardProxyCertificateError)) throw error
    const reason = error.message.replace(/^fastify-forward-proxy: /, '')
    throw new ForwardProxyCertificateError(error.reason, `the development CA in ${dataDirectory} cannot be used: ${reason}. It is never replaced automatically (clients may trust it): remove ${certPath} and ${keyPath} to have a new one created, and make clients trust the new ${DEVELOPMENT_CA_FILES.cert}`)
  } finally {
    key.fill(0)
  }
}

async function createFiles (dataDirectory: string, certPath: string, keyPath: string, options: DevelopmentCaOptions): Promise<void> {
  const made = mkdirSync(dataDirectory, { recursive: true, mode: DIRECTORY_MODE })
  // The umask can only take bits away from 0700; chmod anyway so the mode is exactly that.
  if (made !== undefined) chmodSync(dataDirectory, DIRECTORY_MODE)
  const material = await mintDevelopmentCa(options)
  writeNewFile(keyPath, material.key, KEY_MODE)
  writeNewFile(certPath, material.cert, CERT_MODE)
}

/**
 * Writes `text` to a temporary file created with `mode` (O_EXCL), then links it to `path`,
 * which fails rather than replace a file that appeared meanwhile, and removes the temporary name.
 */
function writeNewFile (path: string, text: string, mode: number): void {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`
  const fd = openSync(temporary, 'wx', mode)
  const bytes = Buffer.from(text, 'latin1')
  try {
    try {
      writeSync(fd, bytes)
      fsyncSync(fd)
    } finally {
      bytes.fill(0)
      closeSync(fd)
    }
    chmodSync(temporary, mode) // exactly `mode`, whatever the umask took away
    linkSync(temporary, path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new ForwardProxyCertificateError('bad_ca_certificate', `${path} appeared while the development CA was being created (another process using the same data directory?); start again to reuse it`)
    }
    throw error
  } finally {
    try { unlinkSync(temporary) } catch {}
  }
}

/**
 * Refuses a data directory that another user owns, or that group or others may write: whoever
 * can write there could put in a CA key of their own (or read the one made there), and the leaves
 * it signs are the ones clients trust.
 */
function checkDirectory (dataDirectory: string): void {
  if (process.platform === 'win32') return
  const stats = statSync(dataDirectory)
  const uid = process.getuid?.()
  if (uid !== undefined && stats.uid !== uid) {
    throw new ForwardProxyCertificateError('bad_ca_key', `the development CA's data directory ${dataDirectory} is owned by uid ${stats.uid}, not by the proxy's user (uid ${uid}): another user could replace the CA. Use a directory of the proxy's user ("chown ${uid} ${dataDirectory}", "chmod 700 ${dataDirectory}"), or set dataDirectory`)
  }
  if ((stats.mode & 0o022) !== 0) {
    throw new ForwardProxyCertificateError('bad_ca_key', `permissions ${octalMode(stats.mode & 0o777)} for the development CA's data directory ${dataDirectory} let other users write there and replace the CA. Run "chmod 700 ${dataDirectory}", and if a CA is already in it and others could have written there, remove it to have a new one created`)
  }
}

/** Refuses a development CA file another user owns: they could have put their own CA in its place. */
function checkOwner (path: string, what: string): void {
  const uid = process.getuid?.()
  if (process.platform === 'win32' || uid === undefined) return
  const owner = statSync(path).uid
  if (owner !== uid) {
    throw new ForwardProxyCertificateError('bad_ca_key', `${what} ${path} is owned by uid ${owner}, not by the proxy's user (uid ${uid}): another user may control it. If it is the CA you made, run "chown ${uid} ${path}"; otherwise remove the development CA files to have a new CA created`)
  }
}

/** Refuses a key file the rule of every private key file refuses (see `tooOpenKeyFile`). */
function checkKeyFileMode (keyPath: string): void {
  const tooOpen = tooOpenKeyFile(keyPath)
  if (tooOpen !== undefined) {
    throw new ForwardProxyCertificateError('bad_ca_key', `permissions ${octalMode(tooOpen.mode)} for the development CA key ${keyPath} are too open: ${tooOpen.reason}; ${KEY_FILE_RULE}. Run "chmod 600 ${keyPath}" if nobody else could have read it; otherwise treat the key as exposed and remove both files to have a new CA created`)
  }
}

function exists (path: string): boolean {
  try {
    statSync(path)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw error
  }
}
