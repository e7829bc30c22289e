// The tokens of a comma-separated header field (`Connection`, `Upgrade`, `Content-Encoding`,
// `Transfer-Encoding`), as the proxy compares them.

/**
 * The comma-separated tokens of a header field, every line of it, trimmed and in lower case;
 * empty ones (`gzip,,br`) left out. No field gives no tokens.
 */
export function headerTokens (value: string | readonly string[] | undefined): string[] {
  if (value === undefined) return []
  const lines: readonly string[] = typeof value === 'string' ? [value] : value
  const tokens: string[] = []
  for (const line of lines) {
    for (const token of line.split(',')) {
      const trimmed = token.trim().toLowerCase()
      if (trimmed !== '') tokens.push(trimmed)
    }
  }
  return tokens
}
