/**
 * The wait a `Retry-After` header asks for (RFC 9110 10.2.3), in milliseconds from `now`:
 * delay-seconds or an HTTP-date. Null when the header is missing or unreadable.
 */
export function retryAfterMs (header: string | string[] | undefined, now: number): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim()
  if (value === undefined || value === '') return null
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  if (Number.isNaN(date)) return null
  return Math.max(0, date - now)
}
