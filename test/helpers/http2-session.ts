import type { ClientHttp2Session } from 'node:http2'
import type { Test } from 'tap'

/**
 * Resolves with `session` once it has connected (rejects with its connection error). Later
 * session errors are left to its streams to report; the session is destroyed at teardown if
 * still open.
 */
export async function connectedSession (t: Test, session: ClientHttp2Session): Promise<ClientHttp2Session> {
  session.on('error', () => {})
  t.teardown(() => { if (!session.destroyed) session.destroy() })
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve())
    session.once('error', reject)
  })
  return session
}
