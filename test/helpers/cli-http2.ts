import { connect, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2'
import type { Socket } from 'node:net'
import type { Test } from 'tap'

/**
 * Opens an HTTP/2 session (ALPN `h2`) to a listener URL of the bundled server, trusting `ca`;
 * destroyed at teardown if still open.
 */
export async function connectHttp2Listener (t: Test, url: string | undefined, ca: Buffer): Promise<ClientHttp2Session> {
  const session = connect(url ?? '', { ca })
  session.on('error', () => {})
  t.teardown(() => { if (!session.destroyed) session.destroy() })
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve())
    session.once('error', reject)
  })
  return session
}

/** The `Proxy-Authorization` value for Basic credentials. */
export const basicProxyAuthorization = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/** Resolves once `total` bytes have arrived on `source`, with exactly those bytes. */
export function collectBytes (source: ClientHttp2Stream | Socket, total: number): Promise<Buffer> {
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
