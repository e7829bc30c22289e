import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import { fixtureDirectory, makeCa, type CaFixture } from './ca-fixtures'

const run = promisify(execFile)

/** How the independent responder behaves. */
export interface OpensslEstResponderOptions {
  /** Basic credentials required on every request (401 otherwise). */
  username?: string
  password?: string
  /** Subject CNs it signs; others get 403. Default: every host. */
  allowlist?: string[]
  /** The first `pending` enrollments answer 202 with `Retry-After: retryAfter` (seconds). */
  pending?: number
  retryAfter?: string
  /** Issue for this DNS name instead of the CSR's SAN (a misbehaving responder). */
  issueForName?: string
  /** Sign leaves with this CA instead of the one /cacerts announces (an untrusted leaf). */
  rogueSigner?: CaFixture
  /**
   * Refuse every enrollment with 403 and a body echoing the Authorization header (a careless
   * service); `decoded` echoes the credentials it carries as well, `user:password`.
   */
  echoAuthorization?: boolean | 'decoded'
  /** Answer every enrollment 200 with this many bytes (more than an EST answer can be). */
  answerBytes?: number
  /** Hold every answer this long, in milliseconds (a slow service). */
  delayMs?: number
}

/** A started responder. */
export interface OpensslEstResponder {
  server: Server
  url: string
  /** The CA /cacerts announces; also the issuer of the responder's own TLS certificate. */
  ca: CaFixture
  /** Enrollment requests received (including 202 answers and refusals). */
  enrollments: number
  /** Enrollment requests that produced a certificate. */
  issued: number
  /** Authorization headers received (to check the client sent Basic). */
  authorizations: string[]
}

/**
 * A minimal EST responder (RFC 7030 cacerts and simpleenroll) written with node:https and the
 * openssl CLI only, independent of the library's own PKI code: `openssl x509 -req` signs the
 * received PKCS#10 request (copying its SAN), `openssl crl2pkcs7 -nocrl` builds the PKCS#7
 * certs-only answer. Listens on 127.0.0.1 with a certificate from its CA; closed at teardown.
 */
export async function startOpensslEstResponder (t: Test, options: OpensslEstResponderOptions = {}): Promise<OpensslEstResponder> {
  const directory = fixtureDirectory(t)
  const ca = await makeCa(directory, { name: 'OpenSSL EST Test CA' })
  const tls = await serverCertificate(directory, ca)
  const cacerts = await pkcs7Base64(directory, ca.certPath)
  const signer = options.rogueSigner ?? ca
  let pendingLeft = options.pending ?? 0
  const state = { enrollments: 0, issued: 0, authorizations: [] as string[] }

  const timers = new Set<NodeJS.Timeout>()
  t.teardown(() => timers.forEach((timer) => clearTimeout(timer)))
  const handle = async (req: IncomingMessage, res: ServerResponse, body: string): Promise<void> => {
    if (options.delayMs !== undefined) await new Promise((resolve) => timers.add(setTimeout(resolve, options.delayMs)))
    if (options.username !== undefined) {
      const expected = `Basic ${Buffer.from(`${options.username}:${options.password ?? ''}`).toString('base64')}`
      if (req.headers.authorization !== expected) return answer(res, 401, 'text/plain', 'authentication required', { 'www-authenticate': 'Basic realm="est"' })
    }
    if (req.method === 'GET' && req.url === '/.well-known/est/cacerts') return answer(res, 200, 'application/pkcs7-mime', cacerts)
    if (req.method !== 'POST' || req.url !== '/.well-known/est/simpleenroll') return answer(res, 404, 'text/plain', 'not found')
    state.enrollments++
    state.authorizations.push(String(req.headers.authorization ?? ''))
    if (options.echoAuthorization !== undefined && options.echoAuthorization !== false) {
      const authorization = String(req.headers.authorization)
      const decoded = options.echoAuthorization === 'decoded' ? ` = ${Buffer.from(authorization.replace(/^Basic /, ''), 'base64').toString()}` : ''
      return answer(res, 403, 'text/plain', `refused for Authorization: ${authorization}${decoded}`)
    }
    if (options.answerBytes !== undefined) return answer(res, 200, 'application/pkcs7-mime', 'A'.repeat(options.answerBytes))
    if (req.headers['content-type'] !== 'application/pkcs10') return answer(res, 415, 'text/plain', 'expected application/pkcs10')
    if (pendingLeft > 0) {
      pendingLeft--
      return answer(res, 202, 'text/plain', 'pending', { 'retry-after': options.retryAfter ?? '1' })
    }
    const csrPath = join(directory, `${randomBytes(6).toString('hex')}.csr`)
    writeFileSync(csrPath, Buffer.from(body, 'base64'))
    const { stdout } = await run('openssl', ['req', '-inform', 'DER', '-in', csrPath, '-verify', '-noout', '-subject', '-nameopt', 'RFC2253'])
    const cn = /CN=([^,\n]+)/.exec(stdout)?.[1] ?? ''
    if (options.allowlist !== undefined && !options.allowlist.includes(cn)) {
      return answer(res, 403, 'text/plain', `host ${cn} is not on this CA's allowlist`)
    }
    const leafPath = `${csrPath}.pem`
    const extPath = `${csrPath}.ext`
    const extensions = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=serverAuth']
    if (options.issueForName !== undefined) extensions.push(`subjectAltName=DNS:${options.issueForName}`)
    writeFileSync(extPath, extensions.join('\n') + '\n')
    await run('openssl', ['x509', '-req', '-inform', 'DER', '-in', csrPath, '-CA', signer.certPath, '-CAkey', signer.keyPath,
      '-set_serial', `0x${randomBytes(8).toString('hex')}`, '-days', '2', '-extfile', extPath,
      ...(options.issueForName === undefined ? ['-copy_extensions', 'copy'] : []), '-out', leafPath])
    state.issued++
    return answer(res, 200, 'application/pkcs7-mime; smime-type=certs-only', await pkcs7Base64(directory, leafPath))
  }

  const server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks).toString('latin1')).catch((error: Error) => answer(res, 500, 'text/plain', error.message))
    })
  })
  server.on('tlsClientError', () => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const responder = {
    server,
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ca,
    get enrollments () { return state.enrollments },
    get issued () { return state.issued },
    authorizations: state.authorizations
  }
  return responder
}

function answer (res: ServerResponse, status: number, type: string, body: string, headers: Record<string, string> = {}): void {
  if (res.writableEnded) return
  res.writeHead(status, { 'content-type': type, ...(status === 200 ? { 'content-transfer-encoding': 'base64' } : {}), ...headers })
  res.end(body)
}

async function pkcs7Base64 (directory: string, certPath: string): Promise<string> {
  const out = join(directory, `${randomBytes(6).toString('hex')}.p7b`)
  await run('openssl', ['crl2pkcs7', '-nocrl', '-certfile', certPath, '-outform', 'DER', '-out', out])
  return (readFileSync(out).toString('base64').match(/.{1,64}/g) ?? []).join('\r\n') + '\r\n'
}

async function serverCertificate (directory: string, ca: CaFixture): Promise<{ cert: string, key: string }> {
  const keyPath = join(directory, 'responder.key')
  const csrPath = join(directory, 'responder.csr')
  const certPath = join(directory, 'responder.pem')
  const extPath = join(directory, 'responder.ext')
  await run('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyPath])
  await run('openssl', ['req', '-new', '-key', keyPath, '-subj', '/CN=127.0.0.1', '-out', csrPath])
  writeFileSync(extPath, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n')
  await run('openssl', ['x509', '-req', '-in', csrPath, '-CA', ca.certPath, '-CAkey', ca.keyPath, '-CAcreateserial', '-days', '2', '-extfile', extPath, '-out', certPath])
  return { cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') }
}
