import { createSecureContext, type SecureContext } from 'node:tls'
import type { ForwardProxyCertificate, ForwardProxyPemCertificate } from '../../types/interception'

// One SecureContext per object a provider returned: a provider that caches its PEM objects
// (as it should: it is called on every handshake) gets its contexts built once, not on every handshake.
const contexts = new WeakMap<ForwardProxyPemCertificate, SecureContext>()

/**
 * The SecureContext for what a certificate provider returned: the context itself, or one
 * built once from PEM material (leaf, then intermediates).
 * @throws Error when the PEM material cannot be loaded (bad PEM, key not matching the leaf).
 */
export function secureContextOf (certificate: ForwardProxyCertificate): SecureContext {
  if (!isPem(certificate)) return certificate
  let context = contexts.get(certificate)
  if (context === undefined) {
    const { cert, key, chain } = certificate
    const intermediates = chain === undefined ? [] : Array.isArray(chain) ? chain : [chain]
    const pem = [cert, ...intermediates].map((part) => (typeof part === 'string' ? part : part.toString('latin1')).trim())
    context = createSecureContext({ cert: `${pem.join('\n')}\n`, key })
    contexts.set(certificate, context)
  }
  return context
}

function isPem (certificate: ForwardProxyCertificate): certificate is ForwardProxyPemCertificate {
  return 'cert' in certificate && 'key' in certificate
}
