import { Writable } from 'node:stream'

/** Fastify logger options writing JSON lines into memory, and the access entries parsed from them. */
export interface CapturedLog {
  readonly logger: { level: string, stream: Writable }
  /** The `access` object of every line that has one, in order. */
  access: () => Array<Record<string, unknown>>
  /** Every line written, as written. */
  lines: () => readonly string[]
}

/** A logger at level info whose lines stay in memory for the test to read. */
export function capturedLog (): CapturedLog {
  const lines: string[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString().split('\n').filter((line) => line !== ''))
      callback()
    }
  })
  return {
    logger: { level: 'info', stream },
    lines: () => lines,
    access: () => lines
      .map((line) => JSON.parse(line) as { access?: Record<string, unknown> })
      .flatMap((entry) => entry.access === undefined ? [] : [entry.access])
  }
}
