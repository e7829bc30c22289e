import { X509Certificate } from 'node:crypto'
import type { TLSSocket } from 'node:tls'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import { loadCertificateAuthority, mintLeaf, signLeaf, type CertificateAuthority } from '../../lib/certificates/ca'
import { certsOnlyPkcs7, decodeEstBase64 } from '../../lib/certificates/est-client'
import { generateLeafKeyPair, leafValidity } from '../../lib/certificates/leaf'
import { pemCertificateBlocks } from '../../lib/certificates/pem'
import { timingSafeEqualText } from '../../lib/security/proxy-auth'
import { Allowlist } from './allowlist'
import { acceptRequest, RequestRefused } from './csr'

const DAY_MS = 86_400_000

/** Said on every start: this service is for development only. */
export const NOT_HARDENED_NOTICE = 'est-dev-service: DEVELOPMENT EST CA SERVICE - NOT A HARDENED DEPLOYMENT. The CA key is held in this process; do not use it for production traffic.'
const PKCS7_TYPE = 'application/pkcs7-mime; smime-type=certs-only'
const MAX_REQUEST_BYTES = 64 * 1024

/** Options of {@link buildEstService}. */
export interface EstDevServiceOptions {
  /** The issuing CA: certificate (PEM, with its own intermediates after it) and key (PEM). */
  readonly ca: { readonly cert: string | Buffer, readonly key: string | Buffer, readonly passphrase?: string }
  /** Hosts signed for: exact names or IPs, or `*.suffix` (see `Allowlist`). Others get 403. */
  readonly allowlist: readonly string[]
  /** HTTP Basic users (name to password). */
  readonly users?: Readonly<Record<string, string>>
  /** CA certificates (PEM) whose client certificates authenticate a client instead of Basic. */
  readonly clientCa?: string | Buffer
  /** Lifetime of issued leaves in days. Default 7. */
  readonly validityDays?: number
  /**
   * The service's own TLS certificate and key (PEM). Default: a leaf for `serverName`
   * minted from the CA at start, so clients trusting the CA trust the service.
   */
  readonly tls?: { readonly cert: string | Buffer, readonly key: string | Buffer }
  /** Name of the default TLS certificate (a DNS name or an IP address). Default `localhost`. */
  readonly serverName?: string
  /** Fastify's logger option. Default false. */
  readonly logger?: FastifyServerOptions['logger']
  /** Where the start-up notice (not a hardened deployment) goes. Default `console.warn`. */
  readonly announce?: (line: string) => void
}

/**
 * A development EST CA service (RFC 7030: `/.well-known/est/cacerts` and `/simpleenroll`) on
 * Fastify over HTTPS. Enrollment requires client authentication: a client certificate issued
 * by `clientCa`, or HTTP Basic for one of `users` (`/cacerts` is public, RFC 7030 4.1.1). A PKCS#10 request is signed only when its one
 * subjectAltName is on the allowlist, with the library's own leaf profile.
 * Not a hardened deployment: the CA key is in this process's memory.
 */
export async function buildEstService (options: EstDevServiceOptions): Promise<FastifyInstance> {
  if ((options.users === undefined || Object.keys(options.users).length === 0) && options.clientCa === undefined) {
    throw new Error('est-dev-service: configure "users" (HTTP Basic) or "clientCa" (client certificates): client authentication is required')
  }
  const ca = loadCertificateAuthority(options.ca, Date.now())
  const allowlist = new Allowlist(options.allowlist)
  const lifetimeMs = (options.validityDays ?? 7) * DAY_MS
  const cacerts = certsOnlyPkcs7(pemCertificateBlocks(ca.chainPem).map((pem) => new X509Certificate(pem).raw)).toString('base64')
  const tls = options.tls ?? await serverCertificate(ca, options.serverName ?? 'localhost')

  const app = Fastify({
    logger: options.logger ?? false,
    https: {
      cert: tls.cert,
      key: tls.key,
      // Ask for a client certificate, but let Basic authenticate a client without one.
      ...(options.clientCa === undefined ? {} : { requestCert: true, rejectUnauthorized: false, ca: options.clientCa })
    }
  })
  app.addHook('onListen', async () => (options.announce ?? console.warn)(NOT_HARDENED_NOTICE))
  app.addContentTypeParser('application/pkcs10', { parseAs: 'buffer', bodyLimit: MAX_REQUEST_BYTES }, (_request, body, done) => done(null, body))
  app.addHook('onRequest', async (request, reply) => {
    // RFC 7030 4.1.1: cacerts SHOULD NOT require client authentication; everything else does.
    if (request.method === 'GET' && request.url === '/.well-known/est/cacerts') return
    if (!authenticated(request, options.users)) {
      await reply.code(401).header('www-authenticate', 'Basic realm="est-dev-service", charset="UTF-8"').type('text/plain').send('client authentication required')
    }
  })

  app.get('/.well-known/est/cacerts', async (_request, reply) => await base64Reply(reply, cacerts))
  app.post('/.well-known/est/simpleenroll', async (request, reply) => {
    if (!Buffer.isBuffer(request.body)) return await reply.code(415).type('text/plain').send('send a base64 PKCS#10 request as application/pkcs10')
    const der = decodeEstBase64(request.body)
    try {
      if (der === null) throw new RequestRefused(400, 'the body is not base64')
      const accepted = await acceptRequest(der)
      if (!allowlist.allows(accepted.host)) throw new RequestRefused(403, `host ${accepted.host} is not on this CA's allowlist`)
      const signed = await signLeaf(ca, accepted.host, accepted.spki, accepted.keyType, leafValidity(Date.now(), lifetimeMs, ca))
      request.log.info({ host: accepted.host, serial: signed.serialNumber }, 'est-dev-service: leaf issued')
      return await base64Reply(reply, certsOnlyPkcs7([new X509Certificate(signed.cert).raw]).toString('base64'))
    } catch (error) {
      if (!(error instanceof RequestRefused)) throw error
      request.log.info({ status: error.status, reason: error.message }, 'est-dev-service: enrollment refused')
      return await reply.code(error.status).type('text/plain').send(error.message)
    }
  })
  return app
}

function authenticated (request: FastifyRequest, users: Readonly<Record<string, string>> | undefined): boolean {
  const socket = request.raw.socket as TLSSocket
  // `authorized` alone is not enough: on a resumed TLS session without a client certificate
  // Node reports it true (the stored verify result is OK), so a certificate must be present.
  if (socket.authorized && Object.keys(socket.getPeerCertificate()).length > 0) return true
  const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(request.headers.authorization ?? '')
  if (match === null || users === undefined) return false
  const decoded = Buffer.from(match[1] ?? '', 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return false
  const expected = users[decoded.slice(0, colon)]
  // Compare against something even for an unknown user, so timing does not tell users apart.
  return timingSafeEqualText(decoded.slice(colon + 1), expected ?? '\u0000unknown') && expected !== undefined
}

async function base64Reply (reply: FastifyReply, base64: string): Promise<FastifyReply> {
  const lines = (base64.match(/.{1,64}/g) ?? []).join('\r\n') + '\r\n'
  return await reply.type(PKCS7_TYPE).header('content-transfer-encoding', 'base64').send(lines)
}

async function serverCertificate (ca: CertificateAuthority, serverName: string): Promise<{ cert: string, key: string }> {
  const leaf = await mintLeaf(ca, serverName, await generateLeafKeyPair('ecdsa-p256'), leafValidity(Date.now(), 30 * DAY_MS, ca))
  return { cert: leaf.cert + leaf.chain, key: leaf.key }
}
