import { connect, type ClientHttp2Session } from 'node:http2'
import type { Test } from 'tap'
import { connectedSession } from './http2-session'

/**
 * Opens an HTTP/2 session (ALPN `h2`) to a listener URL of the bundled server, trusting `ca`;
 * destroyed at teardown if still open.
 */
export async function connectHttp2Listener (t: Test, url: string | undefined, ca: Buffer): Promise<ClientHttp2Session> {
  return await connectedSession(t, connect(url ?? '', { ca }))
}
