// Test PKI for the benchmarks, made with the openssl command: P-256 CAs and leaves for loopback
// addresses and names. Shared by bench/run.mjs, bench/compare.mjs and bench/soak.mjs.
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { join } from 'node:path'

/** A P-256 CA (basicConstraints and keyUsage as a CA needs them) in `directory`. */
export function makeCa (directory, name) {
  const keyPath = join(directory, `${name}.key`)
  const certPath = join(directory, `${name}.pem`)
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-subj', `/CN=bench ${name}`, '-days', '2',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout', keyPath, '-out', certPath
  ], { stdio: 'ignore' })
  return { keyPath, certPath }
}

/** A P-256 server leaf signed by `ca` for `names`: IP addresses and DNS names (default 127.0.0.1). */
export function makeLeaf (directory, name, ca, names = ['127.0.0.1']) {
  const keyPath = join(directory, `${name}.key`)
  const certPath = join(directory, `${name}.pem`)
  const csrPath = join(directory, `${name}.csr`)
  const extPath = join(directory, `${name}.ext`)
  writeFileSync(extPath, `subjectAltName=${names.map((n) => `${isIP(n) === 0 ? 'DNS' : 'IP'}:${n}`).join(',')}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n`)
  execFileSync('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${names[0]}`, '-keyout', keyPath, '-out', csrPath], { stdio: 'ignore' })
  execFileSync('openssl', ['x509', '-req', '-in', csrPath, '-CA', ca.certPath, '-CAkey', ca.keyPath, '-CAcreateserial', '-days', '1', '-extfile', extPath, '-out', certPath], { stdio: 'ignore' })
  return { keyPath, certPath }
}

/** A self-signed P-256 certificate for 127.0.0.1 (CN and IP SAN). */
export function makeSelfSigned (directory) {
  const keyPath = join(directory, 'key.pem')
  const certPath = join(directory, 'cert.pem')
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1',
    '-keyout', keyPath, '-out', certPath
  ], { stdio: 'ignore' })
  return { keyPath, certPath }
}
