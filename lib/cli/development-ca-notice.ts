import type { DevelopmentCaInUse } from './interception-from-config'

/**
 * The start-up lines about the development CA: a warning that it is for development only with
 * the SPEC 1 guidance for production, where its certificate is, and one line per kind of client
 * on how to trust it. The key's path is shown, never its content.
 */
export function developmentCaNotice (ca: NonNullable<DevelopmentCaInUse>): string[] {
  const cert = ca.certPath
  return [
    `  WARNING: TLS interception uses a DEVELOPMENT CA, ${ca.created ? 'created now' : 'reused'} (valid until ${ca.notAfter.toISOString().slice(0, 10)}). Not for production:`,
    `    whoever holds its key (${ca.keyPath}, mode 0600) can impersonate any site to clients that trust it.`,
    '    In production use a dedicated CA ("interception.ca") whose key is kept in a secret store or hardware module,',
    '    intercept only the destinations needed, and inform the people whose traffic is decrypted.',
    `  development CA certificate: ${cert}`,
    '  trust it (curl --cacert, SSL_CERT_FILE and REQUESTS_CA_BUNDLE replace the default roots; NODE_EXTRA_CA_CERTS adds to them):',
    `    curl:     curl --proxy <proxy URL> --cacert ${cert} https://...`,
    `    Node.js:  NODE_EXTRA_CA_CERTS=${cert}`,
    `    OpenSSL:  SSL_CERT_FILE=${cert}`,
    `    Python:   REQUESTS_CA_BUNDLE=${cert}`
  ]
}
