

/**
 * One header rule of the built-in header transform (the configuration
 * file's `headers` key): for requests to a matching host, inside intercepted tunnels and for
 * `http://` forwarding alike.
 */
export interface ForwardProxyHeaderRule {
  /** Host patterns the rule applies to: `example.com`, `*.example.com`, `*`, IP literals. */
  readonly hosts: readonly string[]
  /** Request headers set (replacing any the client sent), e.g. an injected `Authorization`. */
  readonly set?: Readonly<Record<string, string>>
  /** Request headers removed before the request leaves, e.g. `Cookie`. */
  readonly remove?: readonly string[]
  /** Response headers set before the response head reaches the client. */
  readonly setResponse?: Readonly<Record<string, string>>
  /** Response headers removed before the response head reaches the client, e.g. `Server`. */
  readonly removeResponse?: readonly string[]
}
