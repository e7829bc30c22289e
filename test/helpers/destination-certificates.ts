import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** PEM material of one certificate and its key, made with the openssl CLI. */
export interface PemPair {
  cert: string
  key: string
  certPath: string
  keyPath: string
}

/** Options of a leaf certificate issued by {@link issueLeaf}. */
export interface LeafOptions {
  /** subjectAltName entries, e.g. `IP:127.0.0.1` or `DNS:a.test`. Default `IP:127.0.0.1`. */
  san?: string
  /** openssl `-startdate`/`-enddate` (YYYYMMDDHHMMSSZ); default: now until one day later. */
  startDate?: string
  endDate?: string
}

/**
 * A fresh directory for certificate files, removed at teardown. (tap's testdir paths are
 * longer than `openssl ca` can handle.)
 */
export function certificateDirectory (t: Test): string {
  const directory = mkdtempSync(join(tmpdir(), 'ffp-certs-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

/** Creates a self-signed CA (P-256) named `name` in `directory`. */
export async function makeCa (directory: string, name: string): Promise<PemPair> {
  const dir = join(directory, name)
  mkdirSync(dir, { recursive: true })
  const certPath = join(dir, 'ca.pem')
  const keyPath = join(dir, 'ca-key.pem')
  await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-subj', `/CN=${name}`, '-days', '2',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout', keyPath, '-out', certPath
  ])
  return read(certPath, keyPath)
}

/**
 * Issues a certificate signed by `ca` with `openssl ca` (which, unlike `x509 -req` in OpenSSL
 * 3.0, takes an explicit validity window, so expired and not-yet-valid leaves can be made).
 * `isCa` issues an intermediate CA instead of a server leaf.
 */
export async function issueLeaf (directory: string, name: string, ca: PemPair, options: LeafOptions & { isCa?: boolean } = {}): Promise<PemPair> {
  const dir = join(directory, name)
  mkdirSync(dir, { recursive: true })
  const keyPath = join(dir, 'key.pem')
  const csrPath = join(dir, 'req.csr')
  const certPath = join(dir, 'cert.pem')
  const extensions = options.isCa === true
    ? ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign']
    : ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=serverAuth', `subjectAltName=${options.san ?? 'IP:127.0.0.1'}`]
  writeFileSync(join(dir, 'index.txt'), '')
  writeFileSync(join(dir, 'ca.cnf'), [
    '[ca]', 'default_ca = test_ca',
    '[test_ca]', `database = ${join(dir, 'index.txt')}`, `new_certs_dir = ${dir}`, 'rand_serial = yes',
    'default_md = sha256', 'policy = any', 'copy_extensions = none', 'unique_subject = no', 'x509_extensions = ext',
    '[any]', 'commonName = supplied',
    '[ext]', ...extensions
  ].join('\n'))
  await run('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${name}`, '-keyout', keyPath, '-out', csrPath])
  const now = Date.now()
  await run('openssl', [
    'ca', '-batch', '-notext', '-config', join(dir, 'ca.cnf'), '-cert', ca.certPath, '-keyfile', ca.keyPath,
    '-startdate', options.startDate ?? openSslDate(now - 60_000), '-enddate', options.endDate ?? openSslDate(now + 86_400_000),
    '-in', csrPath, '-out', certPath
  ])
  return read(certPath, keyPath)
}

/** Formats a time as openssl's `-startdate`/`-enddate` argument. */
export function openSslDate (time: number): string {
  return new Date(time).toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'
}

function read (certPath: string, keyPath: string): PemPair {
  return { cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8'), certPath, keyPath }
}
