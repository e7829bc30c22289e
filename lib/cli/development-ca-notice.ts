import type { DevelopmentCaInUse } from './interception-from-config'

/** Days before the development CA's end from which the start-up summary warns about it. */
export const DEVELOPMENT_CA_EXPIRY_WARNING_DAYS = 30
const DAY_MS = 86_400_000

/**
 * The start-up lines about the development CA: a warning that it is for development only with
 * the operator guidance for production, where its certificate is, and one line per kind of client
 * on how to trust it; when it ends within {@link DEVELOPMENT_CA_EXPIRY_WARNING_DAYS} days, a
 * warning saying when and how to replace it. The key's path is shown, never its content.
 */
export function developmentCaNotice (ca: NonNullable<DevelopmentCaInUse>, now = Date.now()): string[] {
  const cert = ca.certPath
  return [
    ...expiryWarning(ca, now),
    `  WARNING: TLS interception uses a DEVELOPMENT CA, ${ca.created ? 'created now' : 'reused'} (valid until ${ca.notAfter.toISOString().slice(0, 10)}). Not for production:`,
    `    whoever holds its key (${ca.keyPath}, mode 0600) can impersonate any site to clients that trust it.`,
    '    In production use a dedicated CA ("interception.ca") whose key is kept in a secret store or hardware module,',
    '    intercept only the destinations needed, and inform the people whose traffic is decrypted.',
    `  development CA certificate: ${cert}`,
    '  trust it (curl --cacert, SSL_CERT_FILE and REQUESTS_CA_BUNDLE replace the default roots; NODE_EXTRA_CA_CERTS adds to them):',
    `    curl:     curl --proxy <proxy URL> --cacert ${cert} https://...`,
    `    Node.js:  NODE_EXTRA_CA_CERTS=${cert}`,
    `    OpenSSL:  SSL_CERT_FILE=${cert}`,
    '              (curl reads CURL_CA_BUNDLE before SSL_CERT_FILE: when both are set, CURL_CA_BUNDLE wins)',
    `    Python:   REQUESTS_CA_BUNDLE=${cert}`
  ]
}

/**
 * Leaves are never valid past their CA, so near its end they get shorter and, once it has
 * ended, start-up is refused: say so while there is time to roll a new CA out to clients.
 */
function expiryWarning (ca: NonNullable<DevelopmentCaInUse>, now: number): string[] {
  const left = ca.notAfter.getTime() - now
  if (left >= DEVELOPMENT_CA_EXPIRY_WARNING_DAYS * DAY_MS) return []
  const days = Math.max(0, Math.floor(left / DAY_MS))
  return [
    `  WARNING: the development CA ends on ${ca.notAfter.toISOString().slice(0, 10)} (in ${days} day${days === 1 ? '' : 's'}); the proxy will not start with it after that.`,
    `    To replace it: stop the proxy, remove ${ca.certPath} and ${ca.keyPath}, start again, and make clients trust the new certificate.`
  ]
}
