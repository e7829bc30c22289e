/** A header object as Node builds it for a request: lower-case names, repeats joined or listed. */
export type ReceivedHeaders = Readonly<Record<string, string | string[]>>

// Node 20's HTTP/1.1 parser (_http_incoming.js matchKnownFields) keeps the first value of these
// and drops repeats; `set-cookie` becomes an array, `cookie` is joined with '; ', any other
// repeat with ', '. test/forward-received-headers-match-node.test.ts checks this against Node.
const HTTP1_FIRST_WINS = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host',
  'if-modified-since', 'if-unmodified-since', 'last-modified', 'location', 'max-forwards',
  'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent'
])

// Node 20's HTTP/2 header object (internal/http2/util.js toHeaderObject, kSingleValueHeaders):
// the same joining, with its own list of single-value fields.
const HTTP2_FIRST_WINS = new Set([
  ':status', ':method', ':authority', ':scheme', ':path', ':protocol',
  'access-control-allow-credentials', 'access-control-max-age', 'access-control-request-method',
  'age', 'authorization', 'content-encoding', 'content-language', 'content-length', 'content-location',
  'content-md5', 'content-range', 'content-type', 'date', 'dnt', 'etag', 'expires', 'from', 'host',
  'if-match', 'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since', 'last-modified',
  'location', 'max-forwards', 'proxy-authorization', 'range', 'referer', 'retry-after', 'tk',
  'upgrade-insecure-requests', 'user-agent', 'x-content-type-options'
])

/**
 * Rebuilds, from a request's `rawHeaders`, the header object Node gave the request before any
 * hook could touch it (`IncomingMessage.headers` for HTTP/1.x, `Http2ServerRequest.headers`
 * for HTTP/2). Comparing it with `request.headers` at forward time tells what the application's
 * hooks added, replaced or removed.
 */
export function receivedHeaderObject (rawHeaders: readonly string[], httpVersionMajor: number): ReceivedHeaders {
  const firstWins = httpVersionMajor === 2 ? HTTP2_FIRST_WINS : HTTP1_FIRST_WINS
  const headers: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase()
    const value = rawHeaders[i + 1] as string
    const existing = headers[name]
    if (existing === undefined) headers[name] = name === 'set-cookie' ? [value] : value
    else if (Array.isArray(existing)) existing.push(value)
    else if (firstWins.has(name)) continue
    else headers[name] = `${existing}${name === 'cookie' ? '; ' : ', '}${value}`
  }
  return headers
}
