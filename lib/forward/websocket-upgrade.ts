// WebSocket (and other HTTP/1.1) upgrades: the upgrade request sent on, the destination's answer,
// and the relay once switched.

import type { Socket } from 'node:net'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ProxyRuntime } from '../core/runtime'
import { ProxyError } from '../protocol/errors'
import { errorCode, proxyErrorFromNetworkError } from '../protocol/network-errors'
import { relayTunnel } from '../connect/relay'
import { finishUpgrade, forwardNotesOf, noteDialed, scrubbedSecretsOf } from '../telemetry/request-telemetry'
import { scrubbedBody, scrubHeaders } from './scrubbed-response'
import { createWebSocketScrubStream } from './websocket-scrub'
import type { Readable } from 'node:stream'
import { buildClientResponseHeaders } from './client-response-head'
import { flatHeaderList, headersAsSent, placeSecrets, prepareOutgoingRequest } from './outgoing-request'
import { withInactivityTimeout } from './forwarded-bodies'
import { connectTls } from './destinations'
import { Cancellation } from '../security/destination-connector'
import { transformIncomingResponse, transformOutgoingRequest, type HeaderRecord } from './transforms'
import { headerTokens } from '../protocol/header-tokens'

/** The client's side of a WebSocket upgrade: its connection and the bytes after its head. */
export interface UpgradeClient {
  readonly socket: Socket
  readonly head: Buffer
}

/** A request head's headers as Node parsed them (before any hook). */
type HeadHeaders = Readonly<Record<string, string | string[] | undefined>>

/**
 * True for an HTTP/1.1 WebSocket opening handshake as received (RFC 6455 section 4.1): a GET
 * with `upgrade` among the `Connection` tokens and `websocket` among the `Upgrade` ones.
 */
export function isWebSocketUpgrade (method: string, httpVersion: string, received: HeadHeaders): boolean {
  if (method !== 'GET' || httpVersion !== '1.1') return false
  return headerTokens(received.connection).includes('upgrade') && headerTokens(received.upgrade).includes('websocket')
}

/**
 * True when the request head announces a body (Content-Length above 0 or Transfer-Encoding).
 * Node does not parse the body of an upgrade request, so such a request cannot be forwarded.
 */
export function upgradeRequestHasBody (received: HeadHeaders): boolean {
  const length = received['content-length']
  return received['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/**
 * Relays a WebSocket upgrade inside an intercepted tunnel (HTTP/1.1 only). The request
 * head is prepared like any forwarded request's (`prepareOutgoingRequest`: loop and policy
 * checks, hooks' edits, hop-by-hop removal, `Host` from the target, `Via`; then the
 * transforms and secrets), then `Connection: Upgrade` and the client's `Upgrade` are added
 * back. A new TLS connection to the destination is opened through the policy-checked connector
 * and the destination certificate check (`connectTls`, as every in-tunnel request). On a 101 the
 * response head (hop-by-hop removed, `Via` added, transforms run) is written to the client with
 * `Connection: Upgrade` and `Upgrade`, and bytes are relayed both ways (half-close carried, a
 * failure on either side tears both down, closed after tunnelIdleTimeout without traffic); the
 * bytes the client sent after its head reach the destination only then. Any other answer is
 * relayed as an ordinary response and the client's connection closes after it, its early bytes
 * never forwarded. Throws ProxyError for anything the proxy answers itself.
 */
export async function forwardWebSocketUpgrade (
  request: FastifyRequest,
  reply: FastifyReply,
  runtime: ProxyRuntime,
  target: { readonly destination: ForwardProxyDestination, readonly pathAndQuery: string },
  client: UpgradeClient
): Promise<void> {
  const { limits } = runtime.settings
  const { destination } = target
  const prepared = prepareOutgoingRequest(request, runtime, { destination, scheme: 'https', pathAndQuery: target.pathAndQuery, applyMaxForwards: false })
  const counted = runtime.userPolicy.countInStore(request.proxyUser)
  if (counted !== null) await counted
  const { received, via, transforms } = prepared

  const abort = new Cancellation()
  const onClientClose = (): void => abort.abort()
  client.socket.once('close', onClientClose)
  if (client.socket.destroyed) throw clientLeft()
  const transformed = await transformOutgoingRequest(transforms, request, destination, prepared, abort)
  if (abort.aborted) throw clientLeft()
  const placed = await placeSecrets(request, prepared, transformed, { destination, scheme: 'https' })
  if (abort.aborted) throw clientLeft()
  const { path, scrubber } = placed
  // Compressed frames could hide a value: the scrubber must read every message as sent.
  const headers = scrubber === null ? placed.headers : withoutExtensions(placed.headers)

  const upgradeValue = firstValue(received.upgrade) ?? 'websocket'
  const notes = forwardNotesOf(request)
  const { capture } = notes
  if (capture !== undefined) {
    capture.noteSent('https', destination, prepared.path, scrubber === null ? transformed : withoutExtensions(headersAsSent(transformed, scrubber)))
    capture.dispatchedAt = performance.now()
  }
  const connection = await connectTls(destination, runtime.connector, runtime.destinationTls)
  noteDialed(request, connection)
  // Failures are reported by the HTTP client and the relay; this covers the gaps between them.
  connection.on('error', () => {})
  if (abort.aborted) {
    connection.destroy()
    throw clientLeft()
  }
  const answer = await exchangeUpgradeHead(connection, {
    method: request.method,
    path,
    headers: [...(Array.isArray(headers) ? headers : flatHeaderList(headers)), 'Connection', 'Upgrade', 'Upgrade', upgradeValue]
  }, limits.httpActivityTimeout, abort)
  client.socket.removeListener('close', onClientClose)
  if (capture !== undefined) capture.headAt = performance.now()

  const upstream = answer.kind === 'switched' ? answer.socket : answer.response.socket
  let head
  try {
    head = await transformIncomingResponse(transforms, request, destination, {
      statusCode: answer.response.statusCode ?? 502,
      headers: buildClientResponseHeaders(answer.response.headers, via)
    }, abort)
  } catch (error) {
    upstream.destroy()
    throw error
  }
  const found = scrubbedSecretsOf(request)
  if (scrubber !== null) scrubHeaders(head.headers, scrubber, found)

  if (client.socket.destroyed) {
    upstream.destroy()
    reply.hijack()
    return
  }
  if (answer.kind === 'switched' && head.statusCode === 101) {
    if (answer.socket.destroyed) throw new ProxyError('connection_terminated', 'The destination closed the connection after its 101.')
    reply.hijack()
    const echoed = firstValue(answer.response.headers.upgrade) ?? upgradeValue
    const switchedTo = scrubber === null ? echoed : scrubber.scrubText(echoed, found)
    if (capture !== undefined) capture.switchedHead = { statusCode: 101, headers: { ...head.headers, connection: 'Upgrade', upgrade: switchedTo } }
    client.socket.write(switchingProtocolsHead(head.headers, switchedTo))
    const downstream = scrubber === null ? undefined : createWebSocketScrubStream(() => scrubber.chunkScrubber(found))
    if (answer.head.length > 0) (downstream ?? client.socket).write(answer.head)
    if (client.head.length > 0) answer.socket.write(client.head)
    relayTunnel({ input: client.socket, output: client.socket }, answer.socket, {
      idleTimeout: limits.tunnelIdleTimeout,
      onClose: (summary) => finishUpgrade(request, reply, summary),
      ...(downstream === undefined ? {} : { downstream })
    })
    return
  }
  if (answer.kind === 'switched') {
    // A transform turned the 101 into another status: nothing is relayed.
    upstream.destroy()
    reply.code(head.statusCode).headers(head.headers).send()
    return
  }
  const body = withInactivityTimeout(answer.response, limits.httpActivityTimeout, (bytes) => { notes.bytesOut += bytes })
  if (scrubber === null) {
    capture?.tapResponseBody().follow(body)
    reply.code(head.statusCode).headers(head.headers)
    reply.send(body)
    return
  }
  let scrubbed: Readable
  try {
    scrubbed = scrubbedBody(body, head.headers, scrubber, found)
  } catch (error) {
    answer.response.destroy()
    throw error
  }
  capture?.tapResponseBody().follow(scrubbed)
  reply.code(head.statusCode).headers(head.headers)
  reply.send(scrubbed)
}

/** `headers` without `Sec-WebSocket-Extensions`: no extension (permessage-deflate) is offered. */
function withoutExtensions (headers: string[] | HeaderRecord): string[] {
  const flat = Array.isArray(headers) ? headers : flatHeaderList(headers)
  const kept: string[] = []
  for (let i = 0; i + 1 < flat.length; i += 2) {
    if ((flat[i] as string).toLowerCase() !== 'sec-websocket-extensions') kept.push(flat[i] as string, flat[i + 1] as string)
  }
  return kept
}

function switchingProtocolsHead (headers: HeaderRecord, upgrade: string): string {
  const lines = ['HTTP/1.1 101 Switching Protocols']
  for (const [name, value] of Object.entries(headers)) {
    for (const item of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${item}`)
  }
  lines.push('Connection: Upgrade', `Upgrade: ${upgrade}`)
  return `${lines.join('\r\n')}\r\n\r\n`
}

function firstValue (value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

function clientLeft (): ProxyError {
  return new ProxyError('connection_terminated', 'The client went away before the request was forwarded.')
}

/** How the destination answered an upgrade request. */
type UpgradeAnswer =
  /** 101: the connection now carries the upgraded protocol; `head` holds its first bytes. */
  | { readonly kind: 'switched', readonly response: IncomingMessage, readonly socket: Socket, readonly head: Buffer }
  /** Any other final status: an ordinary response whose body follows. */
  | { readonly kind: 'response', readonly response: IncomingMessage }

/** The request head to send. */
interface UpgradeRequestHead {
  readonly method: string
  readonly path: string
  /** Flat name/value pairs, sent as they are (names, order), nothing added. */
  readonly headers: readonly string[]
}

const MAX_RESPONSE_HEAD = 64 * 1024

/**
 * Sends an upgrade request head on an established connection to the destination and waits for
 * its answer, parsed by Node's HTTP client: a 101 (the connection handed back with the bytes that
 * followed the head) or another final response. Fails with a ProxyError: 504
 * `http_response_timeout` after `timeout` without a head, 502 `http_response_header_section_size`
 * for a head over 64 KiB, 502 `http_protocol_error` for an invalid one, the network error's
 * mapping otherwise; `cancel` (the client left) destroys the connection.
 */
function exchangeUpgradeHead (connection: Socket, head: UpgradeRequestHead, timeout: number, cancel: Cancellation): Promise<UpgradeAnswer> {
  return new Promise((resolve, reject) => {
    let settled = false
    const settle = (outcome: UpgradeAnswer | ProxyError): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      stopWatching()
      if (outcome instanceof ProxyError) {
        request.destroy()
        connection.destroy()
        reject(outcome)
      } else resolve(outcome)
    }
    const request = httpRequest({
      createConnection: () => connection,
      method: head.method,
      path: head.path,
      headers: head.headers,
      setHost: false,
      maxHeaderSize: MAX_RESPONSE_HEAD
    })
    const timer = setTimeout(() => settle(new ProxyError('http_response_timeout', 'The destination did not answer in time.')), timeout)
    timer.unref()
    const onAbort = (): void => settle(new ProxyError('connection_terminated', 'The client went away before the destination answered.'))
    const stopWatching = cancel.onAbort(onAbort)
    request.on('error', (error) => settle(responseError(error)))
    request.once('upgrade', (response: IncomingMessage, socket: Socket, rest: Buffer) => settle({ kind: 'switched', response, socket, head: rest }))
    request.once('response', (response: IncomingMessage) => settle({ kind: 'response', response }))
    request.end()
  })
}

function responseError (error: Error): ProxyError {
  const code = errorCode(error) ?? ''
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new ProxyError('http_response_header_section_size', 'The destination sent a response head that is too large.', { cause: error })
  }
  if (code.startsWith('HPE_')) return new ProxyError('http_protocol_error', 'The destination sent an invalid response.', { cause: error })
  return proxyErrorFromNetworkError(error)
}
