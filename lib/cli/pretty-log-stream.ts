import { Writable } from 'node:stream'

const LEVELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' }
// pino's bookkeeping fields, shown in the line's head or not at all.
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v'])

/**
 * Formats one pino JSON line for a person: `2026-11-23T09:00:00.000Z INFO  message key=value`,
 * nested objects flattened with dots (`access.status=200`). A line that is not JSON passes
 * through unchanged. Redaction has already happened: this sees what pino would have written.
 */
export function formatPrettyLine (line: string): string {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(line) as Record<string, unknown>
  } catch {
    return line
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString() : ''
  const level = (LEVELS[Number(entry.level)] ?? String(entry.level)).padEnd(5)
  const fields: string[] = []
  for (const [key, value] of Object.entries(entry)) {
    if (!OMITTED.has(key)) flatten(key, value, fields)
  }
  const message = typeof entry.msg === 'string' ? entry.msg : ''
  return [time, level, message, ...fields].filter((part) => part !== '').join(' ')
}

function flatten (key: string, value: unknown, out: string[]): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [inner, innerValue] of Object.entries(value)) flatten(`${key}.${inner}`, innerValue, out)
    return
  }
  out.push(`${key}=${typeof value === 'string' && !/[\s"=]/.test(value) && value !== '' ? value : JSON.stringify(value)}`)
}

/** A stream for pino's `stream` option that writes each entry to `target` as a readable line. */
export function createPrettyLogStream (target: NodeJS.WritableStream): Writable {
  let pending = ''
  return new Writable({
    write (chunk: Buffer, _encoding, callback) {
      const text = pending + chunk.toString()
      const lines = text.split('\n')
      pending = lines.pop() ?? ''
      const out = lines.filter((line) => line !== '').map((line) => `${formatPrettyLine(line)}\n`).join('')
      if (out === '') callback()
      else target.write(out, () => callback())
    }
  })
}
