// The EST client (RFC 7030): its transport, certification requests and PKCS#7 bodies.

import { X509Certificate, createPrivateKey, webcrypto } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import type { Certificate } from 'pkijs'
import { ForwardProxyEstError } from './errors'
import { EXTENSION_OID, type LeafKeyPair, hostFitsCommonName, leafName, subjectAltNameValue } from './leaf'
import { asn1Js, nodeCryptoEngine, pkiJs } from './pki-library'

const EXCERPT_LENGTH = 160

/** The two EST operations the provider uses, over one transport. */
export class EstClient {
  readonly #transport: EstTransport
  readonly #now: () => number
  readonly #cacertsMaxAge: number
  #cacerts: { certificates: X509Certificate[], fetchedAt: number } | null = null
  #cacertsPending: Promise<X509Certificate[]> | null = null

  constructor (transport: EstTransport, now: () => number, cacertsMaxAge: number) {
    this.#transport = transport
    this.#now = now
    this.#cacertsMaxAge = cacertsMaxAge
  }

  /**
   * The `/cacerts` certificates (RFC 7030 4.1): reused for `cacertsMaxAge`, fetched once for
   * concurrent callers, fetched again when `refresh` is set (a leaf did not chain: CA rotation).
   */
  async cacerts (signal: AbortSignal, refresh = false): Promise<X509Certificate[]> {
    const cached = this.#cacerts
    if (!refresh && cached !== null && this.#now() - cached.fetchedAt < this.#cacertsMaxAge) return cached.certificates
    this.#cacertsPending ??= this.#fetchCacerts(signal).finally(() => { this.#cacertsPending = null })
    return await this.#cacertsPending
  }

  /** Forgets the cached `/cacerts` answer. */
  forgetCacerts (): void {
    this.#cacerts = null
  }

  /**
   * POSTs the PKCS#10 request to `/simpleenroll` (RFC 7030 4.2) and resolves with the issued
   * certificates. A 202 is retried after its Retry-After (RFC 7030 4.2.3) for as long as
   * `deadline` allows; a wait past it fails at once rather than at the deadline.
   */
  async simpleEnroll (csr: Buffer, signal: AbortSignal, deadline: number): Promise<X509Certificate[]> {
    for (;;) {
      const response = await this.#transport.send('simpleenroll', signal, csr)
      if (response.status !== 202) return this.#certificates('simpleenroll', response)
      const wait = retryAfterMs(response.headers['retry-after'], this.#now())
      if (wait === null) throw new ForwardProxyEstError('est_bad_response', 'EST simpleenroll answered 202 without a usable Retry-After', 202)
      if (this.#now() + wait >= deadline) {
        throw new ForwardProxyEstError('est_timeout', `EST simpleenroll answered 202 with Retry-After ${Math.ceil(wait / 1000)} s, past the enrollment timeout`, 202)
      }
      try {
        await sleep(wait, undefined, { signal })
      } catch {
        throw new ForwardProxyEstError('est_timeout', 'EST simpleenroll: still pending (202) when the enrollment timed out', 202)
      }
    }
  }

  async #fetchCacerts (signal: AbortSignal): Promise<X509Certificate[]> {
    const certificates = this.#certificates('cacerts', await this.#transport.send('cacerts', signal))
    if (!certificates.some((certificate) => certificate.ca)) {
      throw new ForwardProxyEstError('est_bad_response', 'EST cacerts answer holds no CA certificate', 200)
    }
    this.#cacerts = { certificates, fetchedAt: this.#now() }
    return certificates
  }

  #certificates (operation: string, response: EstResponse): X509Certificate[] {
    if (response.status !== 200) {
      throw new ForwardProxyEstError('est_refused', `EST ${operation} refused with HTTP status ${response.status}${this.#excerpt(response.body)}`, response.status)
    }
    const der = decodeEstBase64(response.body)
    const certificates = der === null ? null : certificatesOfPkcs7(der)
    if (certificates === null || certificates.length === 0) {
      throw new ForwardProxyEstError('est_bad_response', `EST ${operation} answer is not base64 PKCS#7 certs-only with at least one certificate`, response.status)
    }
    return certificates
  }

  #excerpt (body: Buffer): string {
    const text = body.subarray(0, EXCERPT_LENGTH * 2).toString('utf8').replace(/[^\x20-\x7e]+/g, ' ').trim().slice(0, EXCERPT_LENGTH)
    return text === '' ? '' : `: ${this.#transport.redact(text)}`
  }
}

/** How the transport reaches and authenticates to the EST server. */
export interface EstTransportSettings {
  /** `https://host[:port]/.well-known/est[/label]` without a trailing slash. */
  readonly base: string
  readonly username?: string | undefined
  readonly password?: string | undefined
  readonly clientCert?: string | Buffer | undefined
  readonly clientKey?: string | Buffer | undefined
  readonly clientKeyPassphrase?: string | undefined
  readonly ca?: string | Buffer | ReadonlyArray<string | Buffer> | undefined
  readonly maxResponseBytes: number
}

/** One EST answer: its status, headers and (bounded) body. */
export interface EstResponse {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: Buffer
}

/**
 * HTTPS to the EST server (RFC 7030 3.2): undici with the EST trust anchors and, when given,
 * the client certificate; HTTP Basic credentials are sent only over that TLS connection. The
 * credentials live in this closure only: no error, log or inspect output shows them.
 */
export class EstTransport {
  readonly #base: string
  readonly #agent: Agent
  readonly #authorization: string | undefined
  readonly #secrets: RegExp | null
  readonly #maxResponseBytes: number

  constructor (settings: EstTransportSettings) {
    this.#base = settings.base
    this.#maxResponseBytes = settings.maxResponseBytes
    const ca = settings.ca === undefined ? undefined : (Array.isArray(settings.ca) ? [...settings.ca] : settings.ca as string | Buffer)
    this.#agent = new Agent({
      connect: {
        rejectUnauthorized: true,
        ...(ca === undefined ? {} : { ca }),
        ...(settings.clientCert === undefined ? {} : { cert: settings.clientCert, key: settings.clientKey }),
        ...(settings.clientKeyPassphrase === undefined ? {} : { passphrase: settings.clientKeyPassphrase })
      },
      maxResponseSize: settings.maxResponseBytes
    })
    if (settings.username !== undefined && settings.password !== undefined) {
      const token = Buffer.from(`${settings.username}:${settings.password}`).toString('base64')
      this.#authorization = `Basic ${token}`
      // However short the password, it is redacted: a message made harder to read is better
      // than a credential in the log. One pass, the token first, so that no redaction is
      // searched again and the token is never cut by the password's.
      this.#secrets = secretsPattern([token, settings.password])
    } else {
      this.#authorization = undefined
      this.#secrets = null
    }
  }

  /**
   * GETs or POSTs `operation` (`cacerts`, `simpleenroll`). Resolves with any status; rejects
   * only when no answer came (`est_unreachable`, or `est_timeout` when `signal` aborted).
   */
  async send (operation: string, signal: AbortSignal, body?: Buffer): Promise<EstResponse> {
    const headers: Record<string, string> = {}
    if (this.#authorization !== undefined) headers.authorization = this.#authorization
    if (body !== undefined) {
      headers['content-type'] = 'application/pkcs10'
      headers['content-transfer-encoding'] = 'base64'
    }
    try {
      const response = await request(`${this.#base}/${operation}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers,
        ...(body === undefined ? {} : { body: body.toString('base64') }),
        dispatcher: this.#agent,
        signal
      })
      const chunks: Buffer[] = []
      for await (const chunk of response.body) chunks.push(chunk as Buffer)
      return { status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) }
    } catch (error) {
      if (signal.aborted) throw new ForwardProxyEstError('est_timeout', `EST ${operation} at ${this.#base}: no answer within the timeout`)
      // The server answered, with more than an EST answer can be: a bad response, not a network fault.
      if ((error as { code?: unknown }).code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
        throw new ForwardProxyEstError('est_bad_response', `EST ${operation} at ${this.#base}: the answer is larger than maxResponseBytes (${this.#maxResponseBytes} bytes)`)
      }
      throw new ForwardProxyEstError('est_unreachable', `EST ${operation} at ${this.#base} failed: ${this.redact(describe(error))}`)
    }
  }

  /** `text` with the password and the Basic token replaced, for error messages. */
  redact (text: string): string {
    return this.#secrets === null ? text : text.replace(this.#secrets, '[redacted]')
  }

  /** Closes the connections to the EST server; requests under way fail. */
  async close (): Promise<void> {
    await this.#agent.destroy()
  }
}

/** One pattern that finds any of `secrets` (the empty ones left out), the earlier first at a position. */
function secretsPattern (secrets: readonly string[]): RegExp | null {
  const present = secrets.filter((secret) => secret.length > 0)
  return present.length === 0 ? null : new RegExp(present.map((secret) => secret.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g')
}

function describe (error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = (error as Error & { cause?: unknown }).cause
  const code = (error as Error & { code?: unknown }).code
  const own = `${error.message}${typeof code === 'string' ? ` (${code})` : ''}`
  return cause instanceof Error ? `${own}: ${describe(cause)}` : own
}

const COMMON_NAME = '2.5.4.3'
/** PKCS#9 extensionRequest (RFC 2985 5.4.2). */
export const EXTENSION_REQUEST_OID = '1.2.840.113549.1.9.14'

/**
 * A PKCS#10 certification request (DER) for `host` over `keyPair`, signed with it (SHA-256):
 * subject CN = host (empty for a host over 64 characters, its subjectAltName then critical), and
 * an extensionRequest with one subjectAltName, an iPAddress for an IP host, else a dNSName.
 * @throws ForwardProxyCertificateError (`invalid_host`) for a host no leaf may name.
 */
export async function certificationRequest (host: string, keyPair: LeafKeyPair): Promise<Buffer> {
  const name = leafName(host)
  const fitsCommonName = hostFitsCommonName(host)
  const { Attribute, AttributeTypeAndValue, CertificationRequest, Extension, Extensions, PublicKeyInfo, RelativeDistinguishedNames } = pkiJs()
  const { Utf8String } = asn1Js()
  const subjectAltName = new Uint8Array(subjectAltNameValue(name)).buffer
  const request = new CertificationRequest({
    version: 0,
    subject: new RelativeDistinguishedNames({
      typesAndValues: fitsCommonName ? [new AttributeTypeAndValue({ type: COMMON_NAME, value: new Utf8String({ value: host }) })] : []
    }),
    subjectPublicKeyInfo: PublicKeyInfo.fromBER(keyPair.spki),
    attributes: [new Attribute({
      type: EXTENSION_REQUEST_OID,
      values: [new Extensions({
        extensions: [new Extension({ extnID: EXTENSION_OID.subjectAltName, critical: !fitsCommonName, extnValue: subjectAltName })]
      }).toSchema()]
    })]
  })
  const pkcs8 = createPrivateKey(keyPair.privateKeyPem).export({ type: 'pkcs8', format: 'der' })
  try {
    const algorithm = keyPair.type === 'rsa-2048'
      ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
      : { name: 'ECDSA', namedCurve: 'P-256' }
    const privateKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, algorithm, false, ['sign'])
    await request.sign(privateKey as unknown as Parameters<typeof request.sign>[0], 'SHA-256', nodeCryptoEngine())
  } finally {
    pkcs8.fill(0)
  }
  return Buffer.from(request.toSchema().toBER(false))
}

const SIGNED_DATA = '1.2.840.113549.1.7.2'
const DATA = '1.2.840.113549.1.7.1'

/**
 * Decodes an EST body (RFC 7030 4.1.3, RFC 8951): base64, possibly with line breaks, whatever
 * Content-Transfer-Encoding says. Null when it is not base64.
 */
export function decodeEstBase64 (body: Buffer): Buffer | null {
  const text = body.toString('latin1').replace(/[\r\n\t ]+/g, '')
  if (text.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return null
  return Buffer.from(text, 'base64')
}

/**
 * The certificates of a PKCS#7 / CMS SignedData "certs-only" message (DER), parsed by Node.
 * Null when the bytes are not such a message or a certificate does not parse.
 */
function certificatesOfPkcs7 (der: Uint8Array): X509Certificate[] | null {
  const { Certificate, ContentInfo, SignedData } = pkiJs()
  try {
    const contentInfo = ContentInfo.fromBER(der)
    if (contentInfo.contentType !== SIGNED_DATA) return null
    const signedData = new SignedData({ schema: contentInfo.content })
    const certificates = (signedData.certificates ?? []).filter((item): item is Certificate => item instanceof Certificate)
    return certificates.map((certificate) => new X509Certificate(Buffer.from(certificate.toSchema(true).toBER(false))))
  } catch {
    return null
  }
}

/** A PKCS#7 / CMS SignedData "certs-only" message (DER) holding `certificates` (DER each). */
export function certsOnlyPkcs7 (certificates: readonly Uint8Array[]): Buffer {
  const { Certificate, ContentInfo, EncapsulatedContentInfo, SignedData } = pkiJs()
  const signedData = new SignedData({
    version: 1,
    encapContentInfo: new EncapsulatedContentInfo({ eContentType: DATA }),
    certificates: certificates.map((der) => Certificate.fromBER(der)),
    signerInfos: []
  })
  const contentInfo = new ContentInfo({ contentType: SIGNED_DATA, content: signedData.toSchema(true) })
  return Buffer.from(contentInfo.toSchema().toBER(false))
}

/**
 * The wait a `Retry-After` header asks for (RFC 9110 10.2.3), in milliseconds from `now`:
 * delay-seconds or an HTTP-date. Null when the header is missing or unreadable.
 */
function retryAfterMs (header: string | string[] | undefined, now: number): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim()
  if (value === undefined || value === '') return null
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  if (Number.isNaN(date)) return null
  return Math.max(0, date - now)
}
