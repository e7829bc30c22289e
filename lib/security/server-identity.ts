// Verifying a TLS peer the proxy dials (a destination or an upstream proxy): whether its
// certificate names the host, on every Node line we run on, and which verdicts a client may be told.

import { X509Certificate } from 'node:crypto'
import { isIPv6 } from 'node:net'
import { checkServerIdentity, type PeerCertificate } from 'node:tls'
import { errorCode } from '../protocol/network-errors'

// Verification results (OpenSSL's X509_V_ERR_* names as Node reports them, plus Node's host
// name check) that may be named to the client: they say what is wrong, nothing about the proxy.
const CERTIFICATE_CODES = new Set([
  'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_REVOKED', 'CERT_UNTRUSTED', 'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE', 'CERT_CHAIN_TOO_LONG', 'INVALID_CA', 'INVALID_PURPOSE',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY', 'ERROR_IN_CERT_NOT_BEFORE_FIELD', 'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'PATH_LENGTH_EXCEEDED', 'HOSTNAME_MISMATCH', 'ERR_TLS_CERT_ALTNAME_INVALID', 'ERR_TLS_CERT_ALTNAME_FORMAT'
])

/** The code of a certificate verdict that may be named to the client, or undefined when `error` is no such verdict. */
export function certificateVerdictCode (error: unknown): string | undefined {
  const code = errorCode(error)
  return code !== undefined && CERTIFICATE_CODES.has(code) ? code : undefined
}

/**
 * Node's `tls.checkServerIdentity`, except for an IPv6 literal host, which is matched against the
 * certificate's IP address entries by OpenSSL (`X509Certificate.checkIP`). Since Node 22.23.0
 * and 24.17.0, `tls.checkServerIdentity` passes the host through IDNA before asking whether it
 * is an IP address, and an IPv6 literal comes out empty: no IPv6 destination or upstream would
 * pass (nodejs/node#64144; 24.21 has the fix, 22.23.3 does not). Like Node's own check for an
 * IP host, only IP address entries count, never a DNS name or the common name.
 * Returns undefined when the certificate names `host`, else the error Node would give.
 */
export function serverIdentityError (host: string, certificate: PeerCertificate): Error | undefined {
  if (!isIPv6(host)) return checkServerIdentity(host, certificate)
  if (Buffer.isBuffer(certificate.raw) && new X509Certificate(certificate.raw).checkIP(host) !== undefined) return undefined
  const reason = `IP: ${host} is not in the cert's list: ${certificate.subjectaltname ?? ''}`
  return Object.assign(new Error(`Hostname/IP does not match certificate's altnames: ${reason}`), {
    code: 'ERR_TLS_CERT_ALTNAME_INVALID',
    reason,
    host,
    cert: certificate
  })
}
