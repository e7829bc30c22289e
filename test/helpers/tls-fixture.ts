import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'

/** PEM files of a self-signed certificate for 127.0.0.1, made with openssl for one test. */
export interface TlsFixture {
  certPath: string
  keyPath: string
  cert: Buffer
  key: Buffer
}

/** Creates a self-signed certificate (CN and IP SAN 127.0.0.1) in `directory` with openssl. */
export async function makeSelfSignedCertificate (directory: string): Promise<TlsFixture> {
  const certPath = join(directory, 'cert.pem')
  const keyPath = join(directory, 'key.pem')
  await promisify(execFile)('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1',
    '-keyout', keyPath, '-out', certPath
  ])
  return { certPath, keyPath, cert: readFileSync(certPath), key: readFileSync(keyPath) }
}
