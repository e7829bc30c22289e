// PKI.js and asn1js, loaded when the EST client first writes a PKCS#10 request or reads a PKCS#7
// answer, not when the plugin or the bin starts.
//
// Why: PKI.js's bundle (with asn1js and its hash and byte-stream helpers) holds about 2 MiB of
// heap once loaded, and loading it pauses the event loop. Leaves and the development CA are
// written without it (./certificate-writer), and the operator's CA is checked without it
// (./certificate-fields), so only a proxy enrolling over EST loads it.

import type * as PkiJs from 'pkijs'
import type * as Asn1Js from 'asn1js'
import { webcrypto } from 'node:crypto'

let pki: typeof PkiJs | undefined
let asn1: typeof Asn1Js | undefined
let engine: PkiJs.CryptoEngine | undefined

/** PKI.js, loaded on first call. */
export function pkiJs (): typeof PkiJs {
  pki ??= require('pkijs') as typeof PkiJs
  return pki
}

/** asn1js, loaded on first call. */
export function asn1Js (): typeof Asn1Js {
  asn1 ??= require('asn1js') as typeof Asn1Js
  return asn1
}

type EngineCrypto = ConstructorParameters<typeof PkiJs.CryptoEngine>[0]['crypto']

/**
 * PKI.js over Node's own WebCrypto (no polyfill needed on Node 20). Passed explicitly to every
 * PKI.js call rather than installed with `setEngine`, so other PKI.js users in the process
 * are unaffected. Made on first call.
 */
export function nodeCryptoEngine (): PkiJs.CryptoEngine {
  engine ??= new (pkiJs().CryptoEngine)({ name: 'node-webcrypto', crypto: webcrypto as unknown as EngineCrypto })
  return engine
}
