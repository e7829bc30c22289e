import type { ForwardProxyCredentialCheck, ForwardProxyUserEntry } from './user'
import type { ForwardProxyRequestTransform } from './interception'
import type { ForwardProxySecret } from './secrets'
import type { ForwardProxyUpstreamRule, ForwardProxyUpstreamSelector } from './upstream'
import type { ForwardProxyRedisOptions } from './shared-limits'
import type { ForwardProxyCaptureOptions } from './capture'

/**
 * Proxy authentication. Basic credentials on `Proxy-Authorization`; failures answer
 * 407 with `Proxy-Authenticate: Basic realm="..."`. Give exactly one of `users` or `validate`.
 */
export interface ForwardProxyAuthOptions {
  /** Realm in the `Proxy-Authenticate` challenge. Default `"fastify-forward-proxy"`. */
  realm?: string
  /**
   * Fixed users: name to password (compared in constant time), or to an entry with the
   * password and the user's own policy (`allowedHosts`, `secrets`, `maxConcurrentTunnels`,
   * `requestsPerMinute`, `mode`).
   */
  users?: Readonly<Record<string, string | ForwardProxyUserEntry>>
  /** Custom credential check (database, LDAP, ...). */
  validate?: ForwardProxyCredentialCheck
  /**
   * Brute-force guard: a client address (the TCP peer) that sends `maxFailures` wrong
   * credentials within `window` milliseconds of its first failure gets 429 with
   * `Proxy-Status: ...; error=http_request_denied` for every attempt, right or wrong, until
   * that window ends. Missing or malformed credentials are not counted. Clients behind one NAT
   * share a count. `false` turns it off. Default `{ maxFailures: 10, window: 60000 }`.
   */
  failureLimit?: ForwardProxyAuthFailureLimit | false
}

/** `auth.failureLimit`: wrong credentials allowed per client address and per window. */
export interface ForwardProxyAuthFailureLimit {
  /** Wrong credentials allowed per client address within a window. Default 10. */
  maxFailures?: number
  /** Window length in milliseconds, from the client's first counted failure. Default 60000. */
  window?: number
}

/** One resolved address, as `dns.lookup(..., { all: true })` returns it. */
export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

/**
 * Resolves a host name to its addresses. Injectable for tests and for operators who run their
 * own resolver; the default is `dns.promises.lookup(host, { all: true })`.
 */
export type ForwardProxyResolver = (hostname: string, signal: AbortSignal) => Promise<ResolvedAddress[]>

/**
 * How a host list is applied: `enforce` refuses what it does not allow; `report` lets it through
 * and logs what enforcement would have refused (`access.decision` `would-deny`, with the
 * `reason` and `rule` it would have been refused with), to roll a new list out safely. Report
 * mode covers host lists only (a user's `allowedHosts`, `destinations.allowedHosts` and
 * `deniedHosts`): ports, the address ranges behind `allowPrivateNetworks`, limits, rates,
 * authentication and secret grants are enforced whatever the mode, and a secret is never put in
 * a request that enforcement would have refused (403 instead).
 */
export type ForwardProxyPolicyMode = 'enforce' | 'report'

/**
 * Destination policy. Secure by default: ports 80 and 443 only, and no
 * loopback, private, link-local, CGNAT, multicast, unspecified or reserved addresses, checked
 * after DNS resolution on every connect.
 */
export interface ForwardProxyDestinationOptions {
  /** Host patterns that may be reached: `example.com`, `*.example.com`, `*`, IP literals. Default `['*']`. */
  allowedHosts?: readonly string[]
  /** Host patterns refused with 403 `http_request_denied`; checked before `allowedHosts`. Default `[]`. */
  deniedHosts?: readonly string[]
  /** Ports that may be reached, or `'*'` for any. Default `[80, 443]`. */
  allowedPorts?: readonly number[] | '*'
  /** Allow every special-purpose address range (loopback, private, ...). Default `false`. */
  allowPrivateNetworks?: boolean
  /**
   * CIDR ranges (`10.1.2.0/24`, `fd00::/8`, `127.0.0.1/32`) that may be reached even though
   * they fall in a special-purpose range. Default `[]`.
   */
  allowedNetworks?: readonly string[]
  /**
   * `report` forwards what `allowedHosts` and `deniedHosts` would refuse, and logs it as
   * `would-deny` (see {@link ForwardProxyPolicyMode}); ports and address ranges stay enforced.
   * Default `'enforce'`.
   */
  mode?: ForwardProxyPolicyMode
}

/** Limits and timeouts. All durations in milliseconds. */
export interface ForwardProxyLimitOptions {
  /** Concurrent CONNECT tunnels; beyond it 503 `connection_limit_reached`. Default 10000. */
  maxConcurrentTunnels?: number
  /** A tunnel with no bytes either way for this long is closed. Default 300000 (5 min). */
  tunnelIdleTimeout?: number
  /** Longest wait for a destination's response head or next body bytes. Default 100000 (100 s). */
  httpActivityTimeout?: number
  /** Longest wait for DNS plus the TCP connection to a destination. Default 10000 (10 s). */
  connectTimeout?: number
  /**
   * A client connection to a plain-text listener that sends no byte for this long after it
   * opens is closed (Node's header timeout starts only at the first byte). TLS listeners are
   * bounded by their handshake timeout instead. Default 10000 (10 s).
   */
  firstByteTimeout?: number
  /**
   * While one of a client's HTTP/1.1 tunnels to a destination is being set up (its CONNECT not
   * yet answered or, intercepted, its TLS handshake not yet done), requests from the same client
   * address inside its other intercepted tunnels to that destination (`host:port`) wait for it,
   * this many milliseconds at most: the new tunnel is ready before the client's open ones
   * answer again. Requests to other destinations never wait. Go's HTTP clients before Go 1.23
   * cancel a spare connection they are dialing as soon as a request they dialed it for completes
   * elsewhere; without the wait, under load, such a client opens and abandons thousands of
   * tunnels. A wait ends as soon as the set-up does, so the bound matters only while set-ups are
   * slow: on a loaded proxy, or for a client many milliseconds away (whose requests may then wait
   * up to this long). 0 turns the wait off. Default 100.
   */
  tunnelSetupWait?: number
  /**
   * Forwarded requests in flight at once (`http://` forwarding and requests inside intercepted
   * tunnels, each holding a client and a destination connection); beyond it 503
   * `connection_limit_reached`. Default 10000.
   */
  maxConcurrentRequests?: number
  /**
   * An HTTP/2 client connection that resets more than this many streams before the proxy
   * answered them, within 10 seconds, is closed with GOAWAY `ENHANCE_YOUR_CALM` (the "rapid
   * reset" attack: each stream costs the proxy work the client never waits for). Default 100.
   */
  maxStreamResets?: number
}

/** Options of `fastify.register(forwardProxy, options)`. */
export interface ForwardProxyOptions {
  /** Proxy authentication; omitted means no authentication (only sensible on a private listener). */
  auth?: ForwardProxyAuthOptions
  /** Destination policy. */
  destinations?: ForwardProxyDestinationOptions
  /** Limits and timeouts. */
  limits?: ForwardProxyLimitOptions
  /** Pseudonym in the `Via` header this proxy adds and in its `Proxy-Status`. Default `"fastify-forward-proxy"`. */
  via?: string
  /** DNS resolver used for destination checks and connects. */
  resolver?: ForwardProxyResolver
  /**
   * Transforms applied to every forwarded request and response (`http://` forwarding and
   * intercepted tunnels), in this order, before any added later with
   * `fastify.forwardProxy.addTransform` or by `tlsInterception` (whose own run inside
   * intercepted tunnels only). Default `[]`.
   */
  transforms?: readonly ForwardProxyRequestTransform[]
  /**
   * Credentials the clients never hold: clients send each secret's placeholder, and the proxy
   * puts the value in its place (in header values, inside a Basic `Authorization`, in the path
   * and query) on requests to the secret's hosts inside intercepted tunnels. A placeholder
   * sent anywhere else (another host, a user whose `secrets` do not list it, plain `http://`,
   * a TRACE, a header name or `Host`) gets 403 `http_request_denied` with nothing sent, and a
   * value a destination echoes in a response header reaches the client as the placeholder.
   * The tlsInterception plugin intercepts every secret's hosts. Default `[]`.
   */
  secrets?: readonly ForwardProxySecret[]
  /**
   * Another proxy to reach destinations through (a corporate proxy): rules `[{ hosts, url }]`
   * (the first whose hosts match wins; no match means direct; `url` is `direct`,
   * `http://[user:pw@]host:port` or `https://[user:pw@]host:port`), `'environment'` to follow
   * `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` as curl does, or a function
   * `(destination, request) => url | null`. CONNECT tunnels and the TLS connections of
   * intercepted requests are opened with CONNECT through it, `http://` requests are sent to it
   * in absolute form with its own `Proxy-Authorization`. Failures of the upstream answer 502 or
   * 504 with `next-hop` naming it (never its credentials). Host and port rules apply as
   * without it; names are resolved by the upstream, so only IP-literal destinations are
   * checked against the address policy. Default: none (direct).
   */
  upstreamProxies?: readonly ForwardProxyUpstreamRule[] | 'environment' | ForwardProxyUpstreamSelector
  /**
   * Sends W3C trace context to destinations: with an OpenTelemetry TracerProvider installed,
   * the `traceparent` (and `tracestate`) of each forwarded request's span replaces the client's
   * on `http://` forwarding and on requests inside intercepted tunnels, so the destination's
   * spans join the trace. Without a TracerProvider nothing is added either way (a client's own
   * `traceparent` passes through like any header). `false` never adds or changes them.
   * Default `true`.
   */
  propagateTraceContext?: boolean
  /**
   * Counts each user's `requestsPerMinute` and `maxConcurrentTunnels` and the authentication
   * lockout in one Redis for every process and replica that uses it. Default: none (each
   * process counts its own).
   */
  redis?: ForwardProxyRedisOptions
  /**
   * Records what the proxy forwarded as HAR 1.2 entries (every `http://` request, every request
   * inside an intercepted tunnel, every WebSocket handshake, and one entry per opaque tunnel), to
   * a file and to `fastify.forwardProxy.captures()`, off the request path: a request never waits on
   * the disk. Secrets never reach it. Default: none (nothing recorded, nothing paid).
   */
  capture?: ForwardProxyCaptureOptions
}
