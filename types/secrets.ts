/**
 * A credential the clients never hold. Clients send its `placeholder`; the proxy puts the real
 * `value` in its place on requests to the secret's `hosts` (inside intercepted tunnels only,
 * never over plain `http://`), refuses a request that carries the placeholder anywhere else,
 * and turns the value back into the placeholder when a destination echoes it in a response
 * header. The tlsInterception plugin intercepts the secret's hosts whatever its selector says.
 */
export interface ForwardProxySecret {
  /**
   * Names the secret in logs and in `user.secrets`: 1 to 64 letters, digits, `.`, `-` or `_`.
   * The value is never logged.
   */
  readonly name: string
  /**
   * The credential: 8 to 4096 visible ASCII characters (no spaces or controls; shorter values
   * would be found in ordinary response headers). Give exactly one of `value` and `source`.
   */
  readonly value?: string
  /** Where the value comes from instead (a vault, a KMS): asked when a request needs it. */
  readonly source?: ForwardProxySecretSource
  /**
   * Where the value may be sent: host patterns as in `destinations.allowedHosts`, each with an
   * optional port (`api.example.com:8443`, `[::1]:8443`). An entry without a port means port
   * 443 only.
   */
  readonly hosts: readonly string[]
  /**
   * What clients send instead of the value: 8 to 128 letters, digits, `.`, `-`, `_` or `~`, so
   * it needs no encoding in a URL or a header. Default `ffp_placeholder_<name>_` followed by
   * the first 16 hexadecimal digits of the SHA-256 of the name.
   */
  readonly placeholder?: string
}

/**
 * Supplies a secret's value on demand, e.g. from a vault or a KMS. The proxy asks on the first
 * request whose placeholder needs the value and again once the value it keeps has expired;
 * requests that need it meanwhile wait for the same answer. Values are kept in memory only.
 */
export interface ForwardProxySecretSource {
  /**
   * Returns the current value, or `{ value, maxAge }` with how long (milliseconds) it may be
   * kept; a plain string is kept 5 minutes. `signal` aborts after 10 seconds: a source that
   * throws, rejects or does not answer in time fails the request with 500
   * `proxy_internal_error` (`details="secret unavailable"`), logged without any value; the next
   * request asks again. A value that breaks the rules of `ForwardProxySecret.value` fails the
   * same way.
   */
  getValue (name: string, signal: AbortSignal): Promise<string | { readonly value: string, readonly maxAge?: number }>
}
