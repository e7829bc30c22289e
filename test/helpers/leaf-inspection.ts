import { X509Certificate } from 'node:crypto'
import type { BitString, OctetString } from 'asn1js'
import { Certificate, type AltName, type Extension } from 'pkijs'

/** A minted leaf parsed by both Node and PKI.js. */
export interface ParsedLeaf {
  x509: X509Certificate
  pkijs: Certificate
  extension: (oid: string) => Extension | undefined
}

/** Parses a PEM certificate with Node's X509Certificate and with PKI.js. */
export function parseLeaf (pem: string): ParsedLeaf {
  const x509 = new X509Certificate(pem)
  const pkijs = Certificate.fromBER(x509.raw)
  return { x509, pkijs, extension: (oid) => pkijs.extensions?.find((candidate) => candidate.extnID === oid) }
}

/** The subjectAltName entries as { type, value } (value: string for dNSName, bytes for iPAddress). */
export function subjectAltNames (leaf: ParsedLeaf): Array<{ type: number, value: string | Uint8Array }> {
  const names = leaf.extension('2.5.29.17')?.parsedValue as AltName | undefined
  return (names?.altNames ?? []).map((name) => ({
    type: name.type,
    value: name.type === 7 ? new Uint8Array((name.value as OctetString).valueBlock.valueHexView) : String(name.value)
  }))
}

/** The keyUsage bits as names, read from the BIT STRING. */
export function keyUsageNames (leaf: ParsedLeaf): string[] {
  const bits = leaf.extension('2.5.29.15')?.parsedValue as BitString | undefined
  const bytes = bits?.valueBlock.valueHexView ?? new Uint8Array()
  const names = ['digitalSignature', 'nonRepudiation', 'keyEncipherment', 'dataEncipherment', 'keyAgreement', 'keyCertSign', 'cRLSign', 'encipherOnly', 'decipherOnly']
  return names.filter((_, bit) => ((bytes[bit >> 3] ?? 0) & (0x80 >> (bit & 7))) !== 0)
}

/** The bytes of an OCTET STRING extension value (subject key identifier). */
export function octets (value: unknown): Uint8Array {
  return new Uint8Array((value as OctetString).valueBlock.valueHexView)
}
