/**
 * One header rule of the built-in header transform (the configuration
 * file's `headers` key): for requests to a matching host, inside intercepted tunnels and for
 * `http://` forwarding alike.
 */
export interface ForwardProxyHeaderRule {
  /** Host patterns the rule applies to: `example.com`, `*.example.com`, `*`, IP literals. */
  readonly hosts: readonly string[]
  /**
   * Request headers set (replacing any the client sent), e.g. an injected `Authorization`. To
   * inject a secret, write its placeholder: it is replaced as the request leaves, checked like a
   * client's (granted host and port, the user's `secrets`, TLS only).
   */
  readonly set?: Readonly<Record<string, string>>
  /** Request headers removed before the request leaves, e.g. `Cookie`. */
  readonly remove?: readonly string[]
  /** Response headers set before the response head reaches the client. */
  readonly setResponse?: Readonly<Record<string, string>>
  /** Response headers removed before the response head reaches the client, e.g. `Server`. */
  readonly removeResponse?: readonly string[]
  /**
   * The `set` headers carry a secret: they are sent over TLS only (requests inside intercepted
   * tunnels), and a plain `http://` request to a matching host is refused with 403
   * `http_request_denied` (nothing is sent) rather than sent in clear. Default false. The
   * configuration file sets it on every rule that uses `{{secret:NAME}}`.
   */
  readonly tlsOnly?: boolean
}
