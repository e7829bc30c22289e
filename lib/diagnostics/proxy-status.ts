import type { ProxyError } from './proxy-error'

/**
 * Builds the RFC 9209 `Proxy-Status` value for an error, e.g.
 * `fastify-forward-proxy; error=dns_error; details="no such host"`.
 * `proxy_authentication_required` is not an RFC 9209 type, so it is reported as
 * `http_request_denied` with a detail saying why.
 */
export function formatProxyStatus (pseudonym: string, error: ProxyError): string {
  const type = error.errorType === 'proxy_authentication_required' ? 'http_request_denied' : error.errorType
  let value = `${pseudonym}; error=${type}`
  if (error.details !== undefined) value += `; details=${quoteSfString(error.details)}`
  return value
}

/** Quotes a structured-field string (RFC 8941 section 3.3.3), dropping characters it cannot hold. */
function quoteSfString (text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, '?')
  return `"${printable.replace(/["\\]/g, (c) => `\\${c}`)}"`
}
