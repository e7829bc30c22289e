import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** A certificate and its private key, PEM. */
export interface PemPair {
  cert: Buffer
  key: Buffer
  certPath: string
}

/** The PKI of an interception test, made with the openssl CLI. */
export interface InterceptionPki {
  /** The operator CA clients trust (and nothing else). */
  operatorCa: PemPair
  /** A leaf for 127.0.0.1 and localhost signed by the operator CA: what the proxy presents. */
  interceptionLeaf: PemPair
  /** A separate CA for the HTTPS origins, trusted by the proxy as `trustedDestinationCa`. */
  destinationCa: PemPair
  /** The HTTPS origin's leaf for 127.0.0.1 and localhost, signed by the destination CA. */
  originLeaf: PemPair
}

/**
 * Creates the operator CA, the destination CA and a leaf of each for 127.0.0.1 / localhost, in
 * a temporary directory removed at teardown (tap's testdir names run too long for long test names).
 */
export async function makeInterceptionPki (t: Test): Promise<InterceptionPki> {
  const directory = mkdtempSync(join(tmpdir(), 'interception-pki-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  const operatorCa = await makeCa(directory, 'operator-ca', 'Interception Test Operator CA')
  const destinationCa = await makeCa(directory, 'destination-ca', 'Interception Test Destination CA')
  return {
    operatorCa,
    interceptionLeaf: await makeLeaf(directory, 'interception-leaf', operatorCa),
    destinationCa,
    originLeaf: await makeLeaf(directory, 'origin-leaf', destinationCa)
  }
}

async function makeCa (directory: string, name: string, commonName: string): Promise<PemPair> {
  const certPath = join(directory, `${name}.pem`)
  const keyPath = join(directory, `${name}.key`)
  await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-subj', `/CN=${commonName}`, '-days', '2',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout', keyPath, '-out', certPath
  ])
  return { cert: readFileSync(certPath), key: readFileSync(keyPath), certPath }
}

async function makeLeaf (directory: string, name: string, ca: PemPair): Promise<PemPair> {
  const certPath = join(directory, `${name}.pem`)
  const keyPath = join(directory, `${name}.key`)
  const csrPath = join(directory, `${name}.csr`)
  const extPath = join(directory, `${name}.ext`)
  const caKeyPath = ca.certPath.replace(/\.pem$/, '.key')
  writeFileSync(extPath, [
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=serverAuth',
    'authorityKeyIdentifier=keyid'
  ].join('\n'))
  await run('openssl', [
    'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-subj', '/CN=127.0.0.1', '-keyout', keyPath, '-out', csrPath
  ])
  await run('openssl', [
    'x509', '-req', '-in', csrPath, '-CA', ca.certPath, '-CAkey', caKeyPath,
    '-set_serial', `0x${randomBytes(8).toString('hex').replace(/^[89a-f]/, '1')}`,
    '-days', '1', '-extfile', extPath, '-out', certPath
  ])
  return { cert: readFileSync(certPath), key: readFileSync(keyPath), certPath }
}

/**
 * The bin's `interception` key for `pki`: intercepts `hosts` with leaves from the operator CA
 * (its key file next to its certificate) and trusts the destination CA.
 */
export function interceptionConfig (
  pki: InterceptionPki,
  hosts: string[]
): { hosts: string[], ca: { cert: string, key: string }, trustedDestinationCa: string } {
  return {
    hosts,
    ca: { cert: pki.operatorCa.certPath, key: pki.operatorCa.certPath.replace(/\.pem$/, '.key') },
    trustedDestinationCa: pki.destinationCa.certPath
  }
}
