import { webcrypto } from 'node:crypto'
import { CryptoEngine } from 'pkijs'

type EngineCrypto = ConstructorParameters<typeof CryptoEngine>[0]['crypto']

/**
 * PKI.js over Node's own WebCrypto (no polyfill needed on Node 20). Passed explicitly to every
 * PKI.js call rather than installed with `setEngine`, so other PKI.js users in the process
 * are unaffected.
 */
export const nodeCryptoEngine = new CryptoEngine({ name: 'node-webcrypto', crypto: webcrypto as unknown as EngineCrypto })
