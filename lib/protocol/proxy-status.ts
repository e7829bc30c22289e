// The RFC 9209 `Proxy-Status` field value of an error the proxy answers with.

import type { ProxyError } from './errors'

/**
 * Builds the RFC 9209 `Proxy-Status` value for an error, e.g.
 * `fastify-forward-proxy; error=dns_error; details="no such host"`.
 */
export function formatProxyStatus (pseudonym: string, error: ProxyError): string {
  let value = `${pseudonym}; error=${error.errorType}`
  if (error.details !== undefined) value += `; details=${quoteSfString(error.details)}`
  if (error.nextHop !== undefined) value += `; next-hop=${quoteSfString(error.nextHop)}`
  return value
}

/** Quotes a structured-field string (RFC 8941 section 3.3.3), dropping characters it cannot hold. */
function quoteSfString (text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, '?')
  return `"${printable.replace(/["\\]/g, (c) => `\\${c}`)}"`
}
