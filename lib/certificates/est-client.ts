import type { X509Certificate } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { ForwardProxyEstError } from './est-error'
import { certificatesOfPkcs7, decodeEstBase64 } from './est-pkcs7'
import { retryAfterMs } from './est-retry-after'
import type { EstResponse, EstTransport } from './est-transport'

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
