// What the proxy decides about a request before anything is dialed, for forwarded requests and
// WebSocket upgrades alike: the loop check, the destination and user policy, Max-Forwards, the
// head built in one pass (./outgoing-head), and secrets put in place of their placeholders.

import type { FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ForwardProxyRequestTransform } from '../../types/interception'
import type { ProxyRuntime } from '../core/runtime'
import { ProxyError } from '../protocol/errors'
import { refusedBy } from '../protocol/refusals'
import type { SecretRefusal, SecretSet } from '../security/secrets'
import type { SecretScrubber } from '../security/secret-scrubber'
import { transformsFor, type HeaderRecord } from './transforms'
import { noteReportedRefusal, noteSecrets, proxyRequestSpanOf } from '../telemetry/request-telemetry'
import type { ReportedRefusal } from '../security/report-mode'
import { buildOutgoingHead, decideMaxForwards, viaListsPseudonym, type ReceivedHeaders } from './outgoing-head'

/** Where a forwarded request (or WebSocket upgrade) goes. */
export interface ForwardTarget {
  /** The destination (canonical host and port); `Host` is set from it. */
  readonly destination: ForwardProxyDestination
  /** `http` for absolute-form forwarding; `https` inside intercepted tunnels (validated TLS). */
  readonly scheme: 'http' | 'https'
  /** Path and query sent exactly as received (never normalized). */
  readonly pathAndQuery: string
  /**
   * True for absolute-form requests: TRACE/OPTIONS Max-Forwards is decremented or answered.
   * False inside intercepted tunnels, where Max-Forwards passes untouched.
   */
  readonly applyMaxForwards: boolean
}

/** A request ready for the transforms and then the destination. */
export interface PreparedRequest {
  readonly kind: 'send'
  /** Path and query to send (placeholders still in it). */
  readonly path: string
  /** Flat name/value pairs to send before the transforms (placeholders still in them). */
  readonly headers: string[]
  /** The request's headers as Node parsed them, before any hook touched them. */
  readonly received: ReceivedHeaders
  /** This proxy's `Via` entry, added to the response as well. */
  readonly via: string
  /** The port an omitted `Host` port stands for (80 for http, 443 for https). */
  readonly defaultPort: number
  // Read once: a reconfiguration while this request runs does not change its rules halfway.
  /** The secrets this request was checked against (their values go back to placeholders in the response). */
  readonly secrets: SecretSet | null
  /** The transforms this request and its response run through: those that apply to it. */
  readonly transforms: readonly ForwardProxyRequestTransform[]
  /**
   * What a host list in report mode would have refused, when one would have: the request goes
   * on, but no secret is put in it (a placeholder gets 403).
   */
  readonly reported: ReportedRefusal | null
}

/** What to do with a request: send it, or answer an OPTIONS whose Max-Forwards reached 0. */
export type OutgoingDecision = PreparedRequest | { readonly kind: 'answer-options' }

const SECRET_REFUSALS: Readonly<Record<Exclude<SecretRefusal, 'reported-host'>, string>> = {
  'not-granted': 'secret not allowed for this destination',
  'user-not-granted': 'secret not granted to this user',
  'plain-http': 'credentials are not sent over plain http',
  trace: 'secrets are not sent in a TRACE'
}

/**
 * The `details` and the rule of a placeholder refused for `reason`: the secret's hosts, the
 * user's secrets, the secret's own protections (TLS only, no TRACE), or the host list in report
 * mode that would have refused the request (named as enforcement would have named it).
 */
function secretRefusal (reason: SecretRefusal, secret: string, user: string | undefined, reported: ReportedRefusal | null): { details: string, rule: string } {
  switch (reason) {
    case 'not-granted': return { details: SECRET_REFUSALS[reason], rule: `secrets.${secret}.hosts` }
    case 'user-not-granted': return { details: SECRET_REFUSALS[reason], rule: `users.${user ?? ''}.secrets` }
    case 'reported-host': return { details: `secret not sent: ${reported?.reason ?? 'host not allowed'} (report mode)`, rule: reported?.rule ?? 'destinations.allowedHosts' }
    default: return { details: SECRET_REFUSALS[reason], rule: `secrets.${secret}` }
  }
}

/**
 * Decides what leaves for `target`, in this order: a request whose `Via` already names this
 * proxy is a loop (508 `proxy_loop_detected`); the destination policy and the user's own hosts
 * and request rate (what a host list in report mode would refuse goes on, noted for the access
 * line and kept in `reported`); with `applyMaxForwards`, TRACE and OPTIONS at Max-Forwards 0 are answered
 * here (405 for TRACE, an empty 200 for OPTIONS) and above 0 decremented; then the head is built
 * (see `buildOutgoingHead`: hook edits, hop-by-hop removal, Host, Via, trace context). Secrets
 * are put in place later, after the transforms ({@link placeSecrets}), which see placeholders only.
 * @throws ProxyError for a loop, a refused destination or user, a TRACE at 0.
 */
export function prepareOutgoingRequest (
  request: FastifyRequest,
  runtime: ProxyRuntime,
  target: ForwardTarget & { readonly applyMaxForwards: false }
): PreparedRequest
export function prepareOutgoingRequest (request: FastifyRequest, runtime: ProxyRuntime, target: ForwardTarget): OutgoingDecision
export function prepareOutgoingRequest (request: FastifyRequest, runtime: ProxyRuntime, target: ForwardTarget): OutgoingDecision {
  const { pseudonym, secrets, propagateTraceContext } = runtime.settings
  if (viaListsPseudonym(request.headers.via, pseudonym)) {
    throw new ProxyError('proxy_loop_detected', 'The request has already passed through this proxy.')
  }
  const { destination, scheme, pathAndQuery } = target
  // Both run: the user's request is counted against its rate even when the policy reports.
  const reportedByPolicy = runtime.policy.checkDestination(destination)
  const reportedByUser = runtime.userPolicy.admitRequest(request.proxyUser, destination)
  const reported = reportedByPolicy ?? reportedByUser
  if (reported !== null) noteReportedRefusal(request, reported)

  let maxForwards: string | undefined | 'as-received' = 'as-received'
  if (target.applyMaxForwards) {
    const header = request.headers['max-forwards']
    const decision = decideMaxForwards(request.method, Array.isArray(header) ? header[0] : header)
    if (decision.action === 'refuse-trace') {
      throw new ProxyError('http_request_denied', 'TRACE is not echoed by this proxy.', { status: 405, details: 'Max-Forwards is 0' })
    }
    if (decision.action === 'answer-options') return { kind: 'answer-options' }
    maxForwards = decision.value
  }

  const defaultPort = scheme === 'https' ? 443 : 80
  const span = propagateTraceContext ? proxyRequestSpanOf(request) : undefined
  const { headers, received, via } = buildOutgoingHead(request, { destination, defaultPort, maxForwards }, pseudonym, span)
  // tlsInterception's transforms are for requests inside intercepted tunnels (sent over https) only.
  const transforms = runtime.transforms.lists
  return { kind: 'send', path: pathAndQuery, headers, received, via, defaultPort, secrets, transforms: transformsFor(scheme === 'https' ? transforms.intercepted : transforms.plainHttp, request, destination), reported }
}

/** The path and headers that leave, secrets in place, and how to scrub the response. */
export interface RequestToSend {
  readonly path: string
  readonly headers: string[] | HeaderRecord
  /**
   * Finds secret values in the response (head and body) and puts placeholders back; null when
   * no secret is granted to the destination and none was put in the request.
   */
  readonly scrubber: SecretScrubber | null
}

/**
 * Puts each secret's value in place of its placeholder in what leaves: the path and the headers
 * the transforms returned (so a header rule that sets a placeholder injects the secret, checked
 * like a client's), the secrets named on the access log line. Toward a destination some secret
 * is granted to, the response gets a scrubber, and the request asks for a whole unencoded body
 * (see {@link askingForScrubbableBody}) so that its bytes can be searched. Returns what it was given
 * when the request has no secrets to check, without waiting. A request a host list in report
 * mode would have refused carries no secret: a placeholder its destination is granted is
 * refused too.
 * @throws ProxyError 403 `http_request_denied` for a placeholder that may not be sent there (the
 * details say why, never which secret nor its value).
 */
export function placeSecrets (request: FastifyRequest, prepared: PreparedRequest, headers: string[] | HeaderRecord, target: Pick<ForwardTarget, 'destination' | 'scheme'>): RequestToSend | Promise<RequestToSend> {
  const { secrets } = prepared
  if (secrets === null) return { path: prepared.path, headers, scrubber: null }
  return substituteSecrets(
    request,
    secrets,
    { path: prepared.path, headers: Array.isArray(headers) ? headers : flatHeaderList(headers) },
    target,
    prepared.reported
  )
}

async function substituteSecrets (request: FastifyRequest, secrets: SecretSet, built: { readonly path: string, readonly headers: string[] }, target: Pick<ForwardTarget, 'destination' | 'scheme'>, reported: ReportedRefusal | null): Promise<RequestToSend> {
  const { destination } = target
  const result = await secrets.substitute({
    method: request.method,
    path: built.path,
    headers: built.headers,
    host: destination.host,
    port: destination.port,
    user: request.proxyUser,
    overTls: target.scheme === 'https',
    hostRefusalReported: reported !== null
  })
  if (result.kind === 'refused') {
    noteSecrets(request, [result.secret])
    const { details, rule } = secretRefusal(result.reason, result.secret, request.proxyUser?.name, reported)
    throw refusedBy(rule, new ProxyError('http_request_denied', 'The request carries a secret placeholder that may not be sent there.', { status: 403, details }))
  }
  const sent = result.kind === 'none' ? built : { path: result.path, headers: result.headers }
  if (result.kind === 'substituted') noteSecrets(request, result.secrets)
  const scrubber = result.kind === 'none'
    ? secrets.scrubberFor(destination.host, destination.port)
    : secrets.scrubberFor(destination.host, destination.port, result.given, result.produced)
  return { path: sent.path, headers: scrubber === null ? sent.headers : askingForScrubbableBody(sent.headers), scrubber }
}

/**
 * Flat `headers` asking for a response body the scrubber can search whole: unencoded
 * (`Accept-Encoding: identity`), and without `Range` or `If-Range`, since a client reading a
 * stored value a few bytes at a time would get pieces no scrubber can recognise.
 */
function askingForScrubbableBody (headers: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i + 1 < headers.length; i += 2) {
    const name = (headers[i] as string).toLowerCase()
    if (name !== 'accept-encoding' && name !== 'range' && name !== 'if-range') out.push(headers[i] as string, headers[i + 1] as string)
  }
  out.push('accept-encoding', 'identity')
  return out
}

/**
 * The head a recorded request is captured with, as it left: the transforms' headers, and for a
 * response that is scrubbed what was asked of it (see {@link askingForScrubbableBody});
 * placeholders stay where secrets go.
 */
export function headersAsSent (transformed: string[] | HeaderRecord, scrubber: SecretScrubber | null): string[] | HeaderRecord {
  if (scrubber === null) return transformed
  return askingForScrubbableBody(Array.isArray(transformed) ? transformed : flatHeaderList(transformed))
}

/** Flat name/value pairs of a header record, repeats in order. */
export function flatHeaderList (headers: HeaderRecord): string[] {
  const flat: string[] = []
  for (const [name, value] of Object.entries(headers)) {
    if (Array.isArray(value)) {
      for (const item of value) flat.push(name, item)
    } else {
      flat.push(name, value)
    }
  }
  return flat
}
