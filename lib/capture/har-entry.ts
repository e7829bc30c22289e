// One finished request as a HAR 1.2 entry: the request as sent to the destination, the response as
// the client received it, the timings as measured, and the proxy's own fields.

import { STATUS_CODES } from 'node:http'
import type { ForwardProxyCaptureEntry, ForwardProxyHarNameValue, ForwardProxyHarTimings } from '../../types/capture'
import type { SecretScrubber } from '../security/secret-scrubber'
import type { CaptureSettings } from './capture-settings'
import type { CapturedHeaders, FinishedExchange, HeaderValues } from './capture-record'
import { requestPostData, responseContent } from './har-content'

const REDACTED = '[redacted]'

/**
 * Builds the HAR entry of `exchange`. Never a secret in it: `Proxy-Authorization` is left out,
 * `settings.redactHeaders` are written as `[redacted]`, and every header value and body is
 * scrubbed with `scrubber` (every secret value the proxy knows) on top of the placeholders the
 * request already carries.
 */
export async function buildHarEntry (
  exchange: FinishedExchange,
  settings: CaptureSettings,
  scrubber: SecretScrubber | null
): Promise<ForwardProxyCaptureEntry> {
  const { record } = exchange
  const url = scrubText(record.sent?.url ?? exchange.receivedUrl, scrubber)
  const requestHeaders = harHeaders(record.sent?.headers ?? exchange.receivedHeaders, settings.redactHeaders, scrubber)
  const responseHeaders = harHeaders(exchange.responseHeaders, settings.redactHeaders, scrubber)
  const requestType = headerValue(requestHeaders, 'content-type') ?? 'application/octet-stream'
  const responseType = headerValue(responseHeaders, 'content-type') ?? (exchange.relay === undefined ? 'application/octet-stream' : 'x-unknown')
  const postData = requestPostData(record.requestBody, requestType, settings.maxBodyBytes, scrubber)
  const content = await responseContent(record.responseBody, responseType, headerValue(responseHeaders, 'content-encoding'), settings.maxBodyBytes, scrubber)
  const timings = harTimings(exchange)
  const relay = exchange.relay
  return {
    startedDateTime: new Date(record.startedAt).toISOString(),
    time: ms(Object.values(timings).reduce((sum, value) => value > 0 ? sum + value : sum, 0)),
    request: {
      method: exchange.method,
      url,
      httpVersion: record.sent === undefined ? exchange.clientHttpVersion : 'HTTP/1.1',
      cookies: settings.redactHeaders.has('cookie') ? [] : requestCookies(requestHeaders),
      headers: requestHeaders,
      queryString: queryString(url),
      ...(postData === undefined ? {} : { postData }),
      headersSize: -1,
      bodySize: relay?.bytesUp ?? record.requestBody?.total ?? 0
    },
    response: {
      status: exchange.status,
      statusText: STATUS_CODES[exchange.status] ?? '',
      httpVersion: exchange.clientHttpVersion,
      cookies: settings.redactHeaders.has('set-cookie') ? [] : responseCookies(responseHeaders),
      headers: responseHeaders,
      content,
      redirectURL: headerValue(responseHeaders, 'location') ?? '',
      headersSize: -1,
      bodySize: relay?.bytesDown ?? record.responseBody?.total ?? exchange.responseBytes
    },
    cache: {},
    timings,
    ...(exchange.serverAddress === undefined ? {} : { serverIPAddress: exchange.serverAddress }),
    _user: exchange.user,
    _intercepted: exchange.intercepted,
    _decision: exchange.decision,
    ...(exchange.errorType === undefined ? {} : { _errorType: exchange.errorType }),
    ...(exchange.closeReason === undefined ? {} : { _closeReason: exchange.closeReason }),
    ...(relay === undefined
      ? {}
      : {
          ...(relay.kind === 'websocket' ? {} : { _tunnel: relay.kind }),
          _bytesUp: relay.bytesUp,
          _bytesDown: relay.bytesDown,
          _closeReason: relay.closeReason
        })
  }
}

/**
 * The HAR timings: `blocked` is the proxy's own work before the request left (hooks,
 * authentication, transforms), `connect` and `ssl` the dial of a new connection (-1 on a reused
 * one), `send` until the request body was read, `wait` until the response head, `receive` until
 * the response ended. A relay's `receive` is its whole life. Rounded to microseconds.
 */
function harTimings (exchange: FinishedExchange): ForwardProxyHarTimings {
  const { record, endedAt } = exchange
  const dispatched = record.dispatchedAt
  const head = record.headAt
  // A connection open before the request was dispatched was reused: the request did not wait for its dial.
  const dial = exchange.dial !== undefined && (dispatched === undefined || exchange.dial.openedAt >= dispatched) ? exchange.dial : undefined
  if (dispatched === undefined || head === undefined) {
    // Answered by the proxy (or a relay that never had an HTTP response): one span of work.
    return { blocked: -1, dns: -1, connect: ms(dial?.connect ?? -1), ssl: ms(dial?.ssl ?? -1), send: 0, wait: ms(endedAt - record.start), receive: 0 }
  }
  const dialed = dial === undefined ? 0 : dial.connect + Math.max(0, dial.ssl)
  const sent = Math.max(record.requestSentAt ?? dispatched, dispatched + dialed)
  return {
    blocked: ms(dispatched - record.start),
    dns: -1,
    connect: ms(dial?.connect ?? -1),
    ssl: ms(dial?.ssl ?? -1),
    send: ms(Math.max(0, sent - dispatched - dialed)),
    wait: ms(Math.max(0, head - sent)),
    receive: ms(Math.max(0, endedAt - head))
  }
}

function ms (value: number): number {
  return Math.round(value * 1000) / 1000
}

/** Header pairs for HAR: `Proxy-Authorization` left out, redacted names blanked, values scrubbed. */
function harHeaders (headers: CapturedHeaders | HeaderValues, redact: ReadonlySet<string>, scrubber: SecretScrubber | null): ForwardProxyHarNameValue[] {
  const pairs: ForwardProxyHarNameValue[] = []
  const add = (name: string, value: string): void => {
    const lower = name.toLowerCase()
    if (lower === 'proxy-authorization') return
    pairs.push({ name, value: redact.has(lower) ? REDACTED : scrubText(value, scrubber) })
  }
  if (isFlatList(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) add(headers[i] as string, headers[i + 1] as string)
    return pairs
  }
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const item of value as readonly string[]) add(name, item)
    else add(name, String(value))
  }
  return pairs
}

function isFlatList (headers: CapturedHeaders | HeaderValues): headers is readonly string[] {
  return Array.isArray(headers)
}

function scrubText (text: string, scrubber: SecretScrubber | null): string {
  return scrubber === null ? text : scrubber.scrubText(text, new Set())
}

function headerValue (headers: readonly ForwardProxyHarNameValue[], name: string): string | undefined {
  return headers.find((header) => header.name.toLowerCase() === name)?.value
}

function queryString (url: string): ForwardProxyHarNameValue[] {
  const query = url.indexOf('?')
  if (query === -1) return []
  return [...new URLSearchParams(url.slice(query + 1))].map(([name, value]) => ({ name, value }))
}

function requestCookies (headers: readonly ForwardProxyHarNameValue[]): ForwardProxyHarNameValue[] {
  return headers
    .filter((header) => header.name.toLowerCase() === 'cookie')
    .flatMap((header) => header.value.split(';'))
    .map((pair) => cookiePair(pair))
    .filter((cookie) => cookie !== null)
}

function responseCookies (headers: readonly ForwardProxyHarNameValue[]): ForwardProxyHarNameValue[] {
  return headers
    .filter((header) => header.name.toLowerCase() === 'set-cookie')
    .map((header) => cookiePair(header.value.split(';')[0] ?? ''))
    .filter((cookie) => cookie !== null)
}

function cookiePair (text: string): ForwardProxyHarNameValue | null {
  const equals = text.indexOf('=')
  if (equals <= 0) return null
  return { name: text.slice(0, equals).trim(), value: text.slice(equals + 1).trim() }
}
