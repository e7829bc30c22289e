import type { FastifyRequest } from 'fastify'
import type { PeerCertificate, SecureContext } from 'node:tls'
import type { ForwardProxyDestination } from './destination'

/**
 * Decides, once per CONNECT tunnel, whether the tunnel is intercepted. Runs after
 * authentication, destination policy and every destination filter allowed the tunnel, with
 * `request.proxyUser` set, so the decision can depend on the user or tenant.
 */
export interface ForwardProxyInterceptionSelector {
  /**
   * Returns true to intercept the tunnel, false to relay it opaquely. Throwing answers the
   * CONNECT with 500 `proxy_internal_error`. `signal` aborts when the client goes away.
   */
  shouldIntercept (request: FastifyRequest, destination: ForwardProxyDestination, signal: AbortSignal): boolean | Promise<boolean>
}

/** A leaf certificate as PEM text; the plugin builds one `tls.SecureContext` from it. */
export interface ForwardProxyPemCertificate {
  /** The leaf certificate (PEM), optionally followed by its intermediates. */
  readonly cert: string | Buffer
  /** The leaf's private key (PEM, unencrypted). */
  readonly key: string | Buffer
  /** Intermediate certificates (PEM) sent after the leaf, nearest to the leaf first. */
  readonly chain?: string | Buffer | ReadonlyArray<string | Buffer>
}

/** What a certificate provider hands back: a ready secure context, or PEM material. */
export type ForwardProxyCertificate = SecureContext | ForwardProxyPemCertificate

/**
 * Supplies the certificate the proxy presents to the client for an intercepted destination
 * (a leaf naming that host, from a CA the operator controls). Called on every intercepted TLS handshake, so implementations cache.
 */
export interface ForwardProxyCertificateProvider {
  /**
   * Returns the certificate (with private key and intermediates) for `destination.host`, or
   * null to fail the client's handshake. `signal` aborts when the handshake times out or the
   * client goes away.
   */
  getCertificate (destination: ForwardProxyDestination, signal: AbortSignal): ForwardProxyCertificate | null | Promise<ForwardProxyCertificate | null>
}

/**
 * The outgoing request as the proxy built it (hop-by-hop headers and `Proxy-Authorization`
 * removed, `Via` added), which transforms may edit before it is sent.
 */
export interface ForwardProxyOutgoingRequest {
  /**
   * The request method. Read-only in effect: the proxy framed the request (and will frame the
   * response, e.g. for HEAD) for this method, so a transform that changes it gets 500
   * `proxy_internal_error`.
   */
  method: string
  /**
   * The request target sent to the destination: path and query exactly as received. A
   * transform that changes it gets 500 `proxy_internal_error`.
   */
  path: string
  /**
   * Header names in lower case; repeated headers as arrays. A name set in capitals (`X-Tenant`)
   * replaces the lower-case field of that name once the transforms have run. Includes `host`:
   * setting it to an authority with another normalized host or port gets 500
   * `proxy_internal_error`.
   */
  headers: Record<string, string | string[]>
}

/** The destination's response head, which transforms may edit before it reaches the client. */
export interface ForwardProxyIncomingResponse {
  /** The status code the client will see; a transform may set another one from 200 to 599. */
  statusCode: number
  /**
   * Header names in lower case; repeated headers as arrays. Hop-by-hop headers already removed.
   * A name set in capitals replaces the lower-case field of that name once the transforms have run.
   */
  headers: Record<string, string | string[]>
}

/**
 * Edits forwarded requests and responses. Given to forwardProxy (its `transforms` option,
 * `fastify.forwardProxy.addTransform`), it runs inside intercepted tunnels and on absolute-form
 * `http://` forwarding alike; given to tlsInterception, inside intercepted tunnels only.
 * Several transforms run in registration order, each
 * awaited before the next. A transform that throws answers the request with 500
 * `proxy_internal_error` (on the request side nothing is sent; on the response side the
 * destination's body is discarded). Framing and connection headers (`Transfer-Encoding`,
 * `Connection`, `Upgrade`, `TE`, `Trailer`, `Keep-Alive`, and on requests
 * `Proxy-Authorization`) are the proxy's: adding them, changing `Content-Length`, or leaving a
 * header name or value that is not a valid field (CR, LF, NUL) also gets 500. A deleted `Host`
 * is restored to the destination's.
 */
export interface ForwardProxyRequestTransform {
  /**
   * Whether the transform applies to this request toward `destination`, asked once per request
   * before anything else runs (synchronously: it must not wait). Omitted, the transform applies
   * to every request. A request no transform applies to is sent with the head the proxy built,
   * never copied for the transforms, and its response head is not held for them: a transform
   * for a few hosts should say so here. Throwing answers 500 `proxy_internal_error`.
   */
  appliesTo? (request: FastifyRequest, destination: ForwardProxyDestination): boolean
  /**
   * Edits the outgoing request before it is sent to `destination`. Secrets are put in place
   * after the transforms: a transform sees (and may set) placeholders, never a secret's value.
   */
  transformRequest? (
    request: FastifyRequest,
    destination: ForwardProxyDestination,
    outgoing: ForwardProxyOutgoingRequest,
    signal: AbortSignal
  ): void | Promise<void>
  /** Edits the destination's response head before it is written to the client. */
  transformResponse? (
    request: FastifyRequest,
    destination: ForwardProxyDestination,
    response: ForwardProxyIncomingResponse,
    signal: AbortSignal
  ): void | Promise<void>
}

/**
 * An extra check on every CONNECT tunnel, consulted after authentication and destination
 * policy and before interception is offered. It can refuse a tunnel, intercepted
 * or not; the client gets 403 `http_request_denied`.
 */
export interface ForwardProxyDestinationFilter {
  /** Returns false to refuse the tunnel. Throwing answers 500 `proxy_internal_error`. */
  allowTunnel (request: FastifyRequest, destination: ForwardProxyDestination, signal: AbortSignal): boolean | Promise<boolean>
}

/** A selector, or a factory giving one per CONNECT request (the analogue of scoped services). */
export type ForwardProxyInterceptionSelectorSource =
  | ForwardProxyInterceptionSelector
  | ((request: FastifyRequest) => ForwardProxyInterceptionSelector)

/** A certificate provider, or a factory giving one per CONNECT request. */
export type ForwardProxyCertificateProviderSource =
  | ForwardProxyCertificateProvider
  | ((request: FastifyRequest) => ForwardProxyCertificateProvider)

/** HTTP versions offered to the client by ALPN inside an intercepted tunnel. */
export type ForwardProxyClientProtocols = 'http1' | 'http2' | 'http1AndHttp2'

/**
 * Decides whether the destination's certificate is accepted
 * (replacing the default check). `error` is what the default check found (untrusted chain,
 * expired, wrong host name, ...) or null; return true to accept the certificate.
 */
export type ForwardProxyDestinationCertificateCheck = (
  certificate: PeerCertificate,
  error: Error | null,
  destination: ForwardProxyDestination
) => boolean

/**
 * Options of `fastify.register(tlsInterception, options)`. Register it after `forwardProxy`.
 * The selector and provider may instead be decorated on the instance as
 * `forwardProxyInterceptionSelector` and `forwardProxyCertificateProvider`.
 */
export interface TlsInterceptionOptions {
  /** Decides which tunnels are intercepted; none is intercepted without one. */
  selector?: ForwardProxyInterceptionSelectorSource
  /** Supplies leaf certificates; without one `fastify.ready()` fails. */
  certificateProvider?: ForwardProxyCertificateProviderSource
  /**
   * Transforms for requests inside intercepted tunnels only (never `http://` forwarding), run
   * after any registered earlier, in this order.
   */
  transforms?: readonly ForwardProxyRequestTransform[]
  /** Filters consulted on every CONNECT before interception is offered, in this order. */
  destinationFilters?: readonly ForwardProxyDestinationFilter[]
  /** HTTP versions offered to the client by ALPN. Default `'http1AndHttp2'`. */
  clientProtocols?: ForwardProxyClientProtocols
  /** Time allowed for the client's TLS handshake, in milliseconds. Default 10000. */
  handshakeTimeout?: number
  /**
   * Off by default. For clients that refuse the proxy's certificate (they pin, or were never
   * given the operator CA): when a user's client refuses it for a host `after` times in a row,
   * that user's tunnels to that host are relayed opaquely for `for` milliseconds. Only a TLS
   * alert from the client counts (`unknown_ca`, `bad_certificate`, `certificate_unknown`,
   * `access_denied`), not a connection closed without one. Never for a host a secret is granted
   * to or a header rule (`createHeaderRulesTransform`) names: those stay intercepted.
   */
  passthroughOnClientRefusal?: ForwardProxyPassthroughOnClientRefusal
  /** Extra CA certificates (PEM) trusted for destinations, added to Node's default roots. */
  trustedDestinationCa?: string | Buffer | ReadonlyArray<string | Buffer>
  /** Replaces the default destination certificate check (only error-free certificates). */
  checkDestinationCertificate?: ForwardProxyDestinationCertificateCheck
}

/** See `TlsInterceptionOptions.passthroughOnClientRefusal`. */
export interface ForwardProxyPassthroughOnClientRefusal {
  /** Refusals in a row, by one user's clients for one host, that start the passthrough (an integer from 1). */
  after: number
  /** Milliseconds the passthrough lasts (an integer from 1); the next tunnel after it is intercepted again. */
  for: number
}

/** `request.interception` inside an intercepted tunnel (null for other requests). */
export interface ForwardProxyInterception {
  /** The CONNECT target of the tunnel the request came through. */
  readonly destination: ForwardProxyDestination
}

/** The address the in-memory interception endpoint is listed under (it is never bound to a port). */
export type ForwardProxyInterceptionAddress = 'https://forward-proxy-tls-interception'
