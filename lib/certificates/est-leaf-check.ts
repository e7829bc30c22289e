import type { X509Certificate } from 'node:crypto'
import { ForwardProxyEstError } from './est-error'
import { leafName } from './leaf-name'

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1'
const ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0'
const MAX_CHAIN_LENGTH = 8

/** The leaf does not chain to `/cacerts` (the caller may read `/cacerts` again once: CA rotation). */
export class UnchainedLeafError extends ForwardProxyEstError {}

/** An issued leaf that passed every check, and the certificates to send after it. */
export interface CheckedLeaf {
  readonly leaf: X509Certificate
  /** Issuing CA first, then each issuer in turn, up to the first self-issued CA (included). */
  readonly chain: readonly X509Certificate[]
}

/** What an issued leaf is checked against. */
export interface LeafCheckInput {
  readonly host: string
  /** The DER SubjectPublicKeyInfo of the key the proxy generated for this host. */
  readonly spki: Uint8Array
  /** Certificates of the `/simpleenroll` answer: the leaf, maybe with intermediates. */
  readonly issued: readonly X509Certificate[]
  /** Certificates of the `/cacerts` answer: the only anchors a leaf may chain to. */
  readonly cacerts: readonly X509Certificate[]
  readonly now: number
}

/**
 * Fails closed on anything but a leaf the proxy can present for `host`: the leaf is
 * the certificate for the proxy's own key; its subjectAltName names the host exactly (an
 * iPAddress for IP hosts, a dNSName otherwise; no wildcard, the subject CN is not consulted);
 * it is not a CA, allows server authentication when it restricts usage, and is valid now; and
 * its signatures chain, through CA certificates valid now, to a certificate of `/cacerts`.
 * @throws ForwardProxyEstError (`est_untrusted_leaf`).
 */
export function checkIssuedLeaf (input: LeafCheckInput): CheckedLeaf {
  const { host } = input
  const spki = Buffer.from(input.spki)
  const leaf = input.issued.find((certificate) => spki.equals(certificate.publicKey.export({ type: 'spki', format: 'der' })))
  if (leaf === undefined) throw untrusted(host, 'no certificate in the answer is for the key the proxy generated')
  const name = leafName(host)
  const named = name.type === 'ip'
    ? leaf.checkIP(host) !== undefined
    : leaf.checkHost(host, { subject: 'never', wildcards: false, partialWildcards: false }) === host
  if (!named) throw untrusted(host, `the issued certificate does not name the host in its subjectAltName (it has ${leaf.subjectAltName ?? 'none'})`)
  if (leaf.ca) throw untrusted(host, 'the issued certificate is a CA certificate')
  const usages = leaf.keyUsage as string[] | undefined // Node exposes the extended key usage here
  if (usages !== undefined && !usages.includes(SERVER_AUTH) && !usages.includes(ANY_EXTENDED_KEY_USAGE)) {
    throw untrusted(host, 'the issued certificate does not allow TLS server authentication (extendedKeyUsage)')
  }
  if (!validAt(leaf, input.now)) throw untrusted(host, `the issued certificate is not valid now (${leaf.validFrom} to ${leaf.validTo})`)
  return { leaf, chain: chainToCacerts(input, leaf) }
}

function chainToCacerts (input: LeafCheckInput, leaf: X509Certificate): X509Certificate[] {
  const extras = input.issued.filter((certificate) => certificate !== leaf)
  const chain: X509Certificate[] = []
  let current = leaf
  let anchored = false
  for (let depth = 0; depth < MAX_CHAIN_LENGTH; depth++) {
    const fromCacerts = issuerOf(current, input.cacerts, input.now)
    const issuer = fromCacerts ?? (anchored ? undefined : issuerOf(current, extras, input.now))
    if (issuer === undefined || chain.includes(issuer)) break
    anchored ||= fromCacerts !== undefined
    chain.push(issuer)
    if (issuer.checkIssued(issuer)) break // self-issued: the root
    current = issuer
  }
  if (!anchored) {
    throw new UnchainedLeafError('est_untrusted_leaf', `EST enrollment for ${input.host} refused: the issued certificate (issuer ${oneLine(leaf.issuer)}) does not chain to the EST server's /cacerts certificates`)
  }
  return chain
}

function issuerOf (child: X509Certificate, candidates: readonly X509Certificate[], now: number): X509Certificate | undefined {
  return candidates.find((candidate) => candidate.ca && validAt(candidate, now) && child.checkIssued(candidate) && child.verify(candidate.publicKey))
}

function validAt (certificate: X509Certificate, now: number): boolean {
  return Date.parse(certificate.validFrom) <= now && now < Date.parse(certificate.validTo)
}

function oneLine (name: string): string {
  return name.replace(/\n/g, ', ')
}

function untrusted (host: string, problem: string): ForwardProxyEstError {
  return new ForwardProxyEstError('est_untrusted_leaf', `EST enrollment for ${host} refused: ${problem}`)
}
