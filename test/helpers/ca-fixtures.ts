import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Test } from 'tap'

const run = promisify(execFile)

/** How a fixture CA's private key is made and stored. */
export type CaKeyKind =
  | 'ec-p256-sec1' // BEGIN EC PRIVATE KEY
  | 'ec-p256-pkcs8' // BEGIN PRIVATE KEY
  | 'ec-p384-pkcs8-encrypted' // BEGIN ENCRYPTED PRIVATE KEY, passphrase FIXTURE_PASSPHRASE
  | 'ec-p521-pkcs8' // BEGIN PRIVATE KEY
  | 'rsa-pkcs1' // BEGIN RSA PRIVATE KEY (2048 bits)

/** Passphrase of every encrypted fixture key; tests check it never shows in errors. */
export const FIXTURE_PASSPHRASE = 'fixture-passphrase-4c1e9b'

/** A CA (or other certificate) made with the openssl CLI, with its files. */
export interface CaFixture {
  certPath: string
  keyPath: string
  cert: string
  key: string
  /** Set for encrypted keys. */
  passphrase?: string
}

/** Options of `makeCa`. */
export interface MakeCaOptions {
  name?: string
  keyKind?: CaKeyKind
  days?: number
  /** `-addext` values; default a proper CA (basicConstraints CA:TRUE critical, keyCertSign). */
  extensions?: string[]
  /** Sign with this CA instead of self-signing (an intermediate). */
  issuer?: CaFixture
}

/** The extensions of a proper CA. */
export const CA_EXTENSIONS = ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign', 'subjectKeyIdentifier=hash']

/** A temporary directory removed at teardown. */
export function fixtureDirectory (t: Test): string {
  const directory = mkdtempSync(join(tmpdir(), 'ffp-ca-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

/**
 * Makes a CA certificate and key in `directory` with openssl: self-signed, or issued by
 * `issuer`. Default: EC P-256 key in SEC1 form, 30 days, proper CA extensions.
 */
export async function makeCa (directory: string, options: MakeCaOptions = {}): Promise<CaFixture> {
  const name = options.name ?? 'Fixture CA'
  const slug = name.replace(/[^A-Za-z0-9]+/g, '-')
  const keyKind = options.keyKind ?? 'ec-p256-sec1'
  const keyPath = join(directory, `${slug}.key`)
  const certPath = join(directory, `${slug}.pem`)
  const passphrase = keyKind === 'ec-p384-pkcs8-encrypted' ? FIXTURE_PASSPHRASE : undefined
  await makeKey(keyKind, keyPath)
  const passArgs = passphrase === undefined ? [] : ['-passin', `pass:${passphrase}`]
  const extensions = options.extensions ?? CA_EXTENSIONS
  const days = String(options.days ?? 30)
  if (options.issuer === undefined) {
    await run('openssl', ['req', '-x509', '-new', '-key', keyPath, ...passArgs, '-subj', `/CN=${name}`, '-days', days,
      ...extensions.flatMap((extension) => ['-addext', extension]), '-out', certPath])
  } else {
    const csrPath = join(directory, `${slug}.csr`)
    const extPath = join(directory, `${slug}.ext`)
    await run('openssl', ['req', '-new', '-key', keyPath, ...passArgs, '-subj', `/CN=${name}`, '-out', csrPath])
    writeFileSync(extPath, [...extensions, 'authorityKeyIdentifier=keyid'].join('\n') + '\n')
    const issuerPass = options.issuer.passphrase === undefined ? [] : ['-passin', `pass:${options.issuer.passphrase}`]
    await run('openssl', ['x509', '-req', '-in', csrPath, '-CA', options.issuer.certPath, '-CAkey', options.issuer.keyPath, ...issuerPass,
      '-CAcreateserial', '-days', days, '-extfile', extPath, '-out', certPath])
  }
  return {
    certPath,
    keyPath,
    cert: readFileSync(certPath, 'utf8'),
    key: readFileSync(keyPath, 'utf8'),
    ...(passphrase === undefined ? {} : { passphrase })
  }
}

async function makeKey (kind: CaKeyKind, keyPath: string): Promise<void> {
  switch (kind) {
    case 'ec-p256-sec1':
      await run('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyPath])
      return
    case 'ec-p256-pkcs8':
      await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyPath])
      return
    case 'ec-p384-pkcs8-encrypted':
      await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384', '-aes-256-cbc', '-pass', `pass:${FIXTURE_PASSPHRASE}`, '-out', keyPath])
      return
    case 'ec-p521-pkcs8':
      await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-521', '-out', keyPath])
      return
    case 'rsa-pkcs1':
      await run('openssl', ['genrsa', '-traditional', '-out', keyPath, '2048'])
  }
}

/** Writes `text` to `name` in `directory` and returns the path. */
export function writeFixture (directory: string, name: string, text: string): string {
  const path = join(directory, name)
  writeFileSync(path, text)
  return path
}

/** Runs `openssl verify` with the given arguments; resolves to its output, rejects on failure. */
export async function opensslVerify (args: string[]): Promise<string> {
  const { stdout, stderr } = await run('openssl', ['verify', ...args])
  return stdout + stderr
}
