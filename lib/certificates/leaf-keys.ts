import { generateKeyPair } from 'node:crypto'
import type { ForwardProxyLeafKeyType } from '../../types/certificates'

/** A freshly generated leaf key pair: public key as DER SPKI, private key as PEM PKCS#8. */
export interface LeafKeyPair {
  readonly type: ForwardProxyLeafKeyType
  readonly spki: Buffer
  readonly privateKeyPem: string
}

/**
 * Generates a leaf key pair on libuv's thread pool (not the event loop): ECDSA P-256 or
 * RSA 2048 with exponent 65537.
 */
export async function generateLeafKeyPair (type: ForwardProxyLeafKeyType): Promise<LeafKeyPair> {
  return await new Promise((resolve, reject) => {
    const done = (error: Error | null, spki: Buffer, privateKeyPem: string): void => {
      if (error !== null) reject(error)
      else resolve({ type, spki, privateKeyPem })
    }
    const publicKeyEncoding = { type: 'spki', format: 'der' } as const
    const privateKeyEncoding = { type: 'pkcs8', format: 'pem' } as const
    if (type === 'rsa-2048') generateKeyPair('rsa', { modulusLength: 2048, publicExponent: 0x10001, publicKeyEncoding, privateKeyEncoding }, done)
    else generateKeyPair('ec', { namedCurve: 'P-256', publicKeyEncoding, privateKeyEncoding }, done)
  })
}

/**
 * Key pairs generated ahead of need. Each pair is handed out once, never reused; taking one
 * starts generating its replacement. With size 0 every pair is generated on demand.
 */
export class LeafKeyPool {
  readonly #type: ForwardProxyLeafKeyType
  readonly #size: number
  readonly #ready: LeafKeyPair[] = []
  #generating = 0

  constructor (type: ForwardProxyLeafKeyType, size: number) {
    this.#type = type
    this.#size = size
    this.#refill()
  }

  /** Number of pairs ready to be taken. */
  get ready (): number {
    return this.#ready.length
  }

  /** A pooled pair when one is ready, else a newly generated one. */
  async take (): Promise<LeafKeyPair> {
    const pair = this.#ready.shift()
    this.#refill()
    return pair ?? await generateLeafKeyPair(this.#type)
  }

  #refill (): void {
    while (this.#ready.length + this.#generating < this.#size) {
      this.#generating++
      generateLeafKeyPair(this.#type).then((pair) => {
        this.#ready.push(pair)
      }, () => {
        // A failed pre-generation only leaves the pool short; take() generates on demand.
      }).finally(() => {
        this.#generating--
      })
    }
  }
}
