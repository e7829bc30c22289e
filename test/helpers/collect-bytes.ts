import type { Readable } from 'node:stream'

/** Resolves once `total` bytes have arrived on `source`, with exactly those bytes; rejects if it closes first. */
export function collectBytes (source: Readable, total: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let received = 0
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk)
      received += chunk.length
      if (received >= total) { source.removeListener('data', onData); resolve(Buffer.concat(chunks)) }
    }
    source.on('data', onData)
    source.once('close', () => { if (received < total) reject(new Error(`closed after ${received} of ${total} bytes`)) })
  })
}
