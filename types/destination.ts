/**
 * Where a proxy request is going: the CONNECT target or the authority of an absolute-form
 * `http://` target, after validation and canonicalization.
 *
 * `host` is lower-case, without a trailing dot, IDNA-encoded (punycode) for internationalized
 * names, and a canonical IP literal (IPv6 without brackets) when the target is an address.
 */
export interface ForwardProxyDestination {
  /** Host name or IP address (IPv6 without brackets). Also the name a leaf certificate is issued for. */
  readonly host: string
  /** TCP port of the destination. */
  readonly port: number
}
