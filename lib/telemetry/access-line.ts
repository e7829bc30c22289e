// A proxy request's access log line: what it says, and whether the request's logger writes it.

import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { TunnelKind } from './metrics'
import type { ProxyError } from '../protocol/errors'
import { refusalRuleOf } from '../protocol/refusals'
import { formatAuthority } from '../protocol/hosts'
import type { ReportedRefusal } from '../security/report-mode'
import { dialedAddressOf } from '../security/dialed-address'

/** What a request's telemetry collects for its access line while the request runs. */
export interface AccessLineNotes {
  /** The destination as parsed; formatted `host:port` (`[v6]:port`) only for the access line. */
  readonly destination: ForwardProxyDestination | undefined
  readonly clientAddress: string | undefined
  /**
   * Inside an intercepted tunnel, the user who opened it, read at arrival: an HTTP/2 request
   * loses the link to its tunnel (its stream's session) once the stream has closed.
   */
  readonly tunnelUser: string | null | undefined
  /** The error the proxy answered with, if it answered with one. */
  error: ProxyError | undefined
  /** What a host list in report mode would have refused (the request went on). */
  reported: ReportedRefusal | undefined
  /** Names of the secrets the request used or was refused for (never their values). */
  secrets: readonly string[] | undefined
  /** Names of the secrets whose values were found in the response and replaced. */
  scrubbed: Set<string> | undefined
  /** The socket the request was sent on or the tunnel dialed, for the address on the line. */
  dialed: object | undefined
}

/** What differs between the access log lines of a request, a tunnel, an upgrade and an abandoned CONNECT. */
export interface AccessOutcome {
  readonly kind: string
  /** A tunnel's kind (`opaque`, `intercepted`, ...), on tunnel lines only. */
  readonly tunnel?: TunnelKind
  readonly status: number
  readonly errorType?: string | undefined
  /** Why a tunnel or relay closed, on the lines of connections that outlived their answer. */
  readonly closeReason?: string
  /** Why an intercepted tunnel's client handshake failed (Node's error code). */
  readonly handshakeError?: string | undefined
  readonly bytesIn: number
  readonly bytesOut: number
}

/**
 * The `access` object of one access log line, field by field in the order they are written.
 * Fields left undefined are not written.
 */
interface AccessRecord {
  readonly kind: string
  readonly tunnel: TunnelKind | undefined
  readonly user: string | null
  readonly client: string | null
  readonly method: string
  readonly destination: string | null
  readonly address: string | undefined
  readonly intercepted: boolean
  readonly decision: 'allow' | 'deny' | 'would-deny'
  readonly reason: string | undefined
  readonly rule: string | undefined
  readonly status: number
  readonly errorType: string | null
  readonly closeReason: string | undefined
  readonly handshakeError: string | undefined
  readonly bytesIn: number
  readonly bytesOut: number
  readonly secrets: readonly string[] | undefined
  readonly scrubbed: readonly string[] | undefined
  readonly durationMs: number
}

/**
 * Writes one access log line (`access`): the outcome, with who (the tunnel's user inside an
 * intercepted tunnel, else the proxy user), from where, what, to where (the destination and the
 * address dialed for it), whether it was intercepted, the decision and the rule that made it,
 * the secrets used and the duration since the request arrived. Fields left undefined are not
 * written.
 *
 * The decision: `deny` when the proxy refused the request (its error names a rule, see
 * `refusalRuleOf`), else `would-deny` when a host list in report mode would have refused it (the
 * rule and reason it would have been refused with), else `allow` (the proxy's rules let it
 * through; it may still have failed, see `errorType`). Every answer that is one of the proxy's
 * own errors carries a reason: the error's `details`, as in `Proxy-Status`, or its message.
 * The line goes through the logger's access line writer when it has one
 * ({@link writeAccessLinesWith}), else through `request.log.info`.
 */
export function logAccess (request: FastifyRequest, reply: FastifyReply, state: AccessLineNotes | undefined, outcome: AccessOutcome, message: string): void {
  const error = state?.error
  const refusedBy = error === undefined ? undefined : refusalRuleOf(error)
  const reported = refusedBy === undefined ? state?.reported : undefined
  const access: AccessRecord = {
    kind: outcome.kind,
    tunnel: outcome.tunnel,
    user: userOf(request, state),
    client: state?.clientAddress ?? null,
    method: request.method,
    destination: state?.destination === undefined ? null : formatAuthority(state.destination.host, state.destination.port),
    address: dialedAddressOf(state?.dialed),
    intercepted: outcome.kind === 'intercepted' || outcome.tunnel === 'intercepted',
    decision: decisionOf(refusedBy, reported),
    reason: reported !== undefined ? reported.reason : (error?.details ?? error?.message),
    rule: refusedBy ?? reported?.rule,
    status: outcome.status,
    errorType: outcome.errorType ?? null,
    closeReason: outcome.closeReason,
    handshakeError: outcome.handshakeError,
    bytesIn: outcome.bytesIn,
    bytesOut: outcome.bytesOut,
    secrets: state?.secrets,
    scrubbed: state?.scrubbed === undefined || state.scrubbed.size === 0 ? undefined : [...state.scrubbed],
    durationMs: Math.round(reply.elapsedTime * 1000) / 1000
  }
  writeAccess(request.log, request, access, message)
}

/** What the access line of a request refused before it was routed (no Fastify request exists for it) says of it. */
export interface UnroutedRefusal {
  readonly kind: string
  readonly method: string
  readonly user: string | null
  readonly client: string | null
  readonly destination: ForwardProxyDestination | undefined
  readonly error: ProxyError
}

/**
 * Writes the access log line of a request the proxy refused before routing it into Fastify (so
 * that no hook could act on it): `deny` with the rule and reason of its error, no bytes, no
 * duration and no request id. Through the logger's access line writer when it has one.
 */
export function logUnroutedRefusal (log: FastifyBaseLogger, refusal: UnroutedRefusal, message: string): void {
  const { error, destination } = refusal
  const access: AccessRecord = {
    kind: refusal.kind,
    tunnel: undefined,
    user: refusal.user,
    client: refusal.client,
    method: refusal.method,
    destination: destination === undefined ? null : formatAuthority(destination.host, destination.port),
    address: undefined,
    intercepted: refusal.kind === 'intercepted',
    decision: 'deny',
    reason: error.details ?? error.message,
    rule: refusalRuleOf(error) ?? 'request',
    status: error.status,
    errorType: error.errorType,
    closeReason: undefined,
    handshakeError: undefined,
    bytesIn: 0,
    bytesOut: 0,
    secrets: undefined,
    scrubbed: undefined,
    durationMs: 0
  }
  writeAccess(log, {}, access, message)
}

function writeAccess (log: FastifyBaseLogger, request: AccessLineRequest, access: AccessRecord, message: string): void {
  const write = (log as WithAccessLineWriter)[ACCESS_LINE_WRITER]
  if (write === undefined) log.info({ access }, message)
  else write(request, access, message)
}

/** The request an access line is about, as its writer sees it: its id, absent for one refused before routing. */
interface AccessLineRequest {
  readonly id?: string
}

/**
 * Writes one info-level access line for `request` itself, with `access` as its `access` field
 * and `message` as its message, exactly as the logger would have written
 * `request.log.info({ access }, message)`.
 */
export type AccessLineWriter = (request: AccessLineRequest, access: AccessRecord, message: string) => void

const ACCESS_LINE_WRITER = Symbol('fastify-forward-proxy.accessLineWriter')

type WithAccessLineWriter = FastifyBaseLogger & { readonly [ACCESS_LINE_WRITER]?: AccessLineWriter }

/**
 * Has `logger`, and every child logger made from it from now on (pino's children inherit its
 * properties: each request's `request.log` is one), write access lines through `write` instead
 * of its own serialization of `{ access }`. For a logger whose lines are known, such as the
 * bundled server's: the writer makes the line in one go, without the logger's walk of the entry
 * (its formatters, serializers and a dozen concatenations), which allocated about 0.4 KB more per
 * forwarded request.
 */
export function writeAccessLinesWith (logger: FastifyBaseLogger, write: AccessLineWriter): void {
  Object.defineProperty(logger, ACCESS_LINE_WRITER, { value: write, configurable: true })
}

/** Who made the request: inside an intercepted tunnel its user (read at arrival), else the proxy user; null without one. */
export function userOf (request: FastifyRequest, state: AccessLineNotes | undefined): string | null {
  return state?.tunnelUser === undefined ? (request.proxyUser?.name ?? null) : state.tunnelUser
}

/** `deny` when the proxy refused the request, `would-deny` when report mode let it through, else `allow`. */
export function decisionOf (refusedBy: string | undefined, reported: ReportedRefusal | undefined): 'allow' | 'deny' | 'would-deny' {
  return refusedBy !== undefined ? 'deny' : reported !== undefined ? 'would-deny' : 'allow'
}

/** The no-op of Fastify's logger under `logger: false`, once seen: its requests log nothing. */
let silentInfo: unknown

/** True when `log` writes info lines: the access log line is not even built otherwise. */
export function logsInfo (log: FastifyBaseLogger): boolean {
  const { info } = log
  if (info === silentInfo) return false
  const { isLevelEnabled } = log as Partial<{ isLevelEnabled: (level: string) => boolean }>
  if (typeof isLevelEnabled === 'function') return isLevelEnabled.call(log, 'info')
  const { level } = log as Partial<FastifyBaseLogger>
  if (level !== undefined) return level !== 'silent'
  // Fastify's logger under `logger: false`: no level, one no-op named `noop` for every level.
  // Its name is read once: reading a function's name is a call into the engine.
  if (info !== log.fatal || info.name !== 'noop') return true
  silentInfo = info
  return false
}
