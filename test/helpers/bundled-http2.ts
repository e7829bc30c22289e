import type { Test } from 'tap'
import type { RunningProxyServer } from './internals'
import { makeSelfSignedCertificate } from './tls-fixture'
import { LOOPBACK_ORIGINS, portOf, startConfiguredServer } from './cli-server'
import { connectHttp2Listener } from './cli-http2'
import { openHttp2Tunnel } from './http2-proxy'

/** The ready-to-run server with one HTTP/2 TLS listener, and what a client needs to reach it. */
export interface BundledHttp2 {
  server: RunningProxyServer
  port: number
  /** The listener's self-signed certificate, to trust. */
  ca: Buffer
  /** Opens a fresh HTTP/2 session and a CONNECT tunnel to `authority`; resolves with its status. */
  tunnelStatus (authority: string): Promise<number>
}

/** Starts the ready-to-run server (loopback origins allowed) with an HTTP/2 listener; closed at teardown. */
export async function startBundledHttp2 (t: Test, config: object = {}): Promise<BundledHttp2> {
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const listener = { host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }
  const server = await startConfiguredServer(t, { listen: [listener], destinations: LOOPBACK_ORIGINS, ...config }, dir)
  return {
    server,
    port: portOf(server.urls[0]),
    ca: tls.cert,
    tunnelStatus: async (authority) => {
      const session = await connectHttp2Listener(t, server.urls[0], tls.cert)
      const tunnel = await openHttp2Tunnel(session, authority)
      session.destroy()
      return tunnel.status
    }
  }
}
