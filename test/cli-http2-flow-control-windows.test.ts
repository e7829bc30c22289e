import { test } from 'tap'
import { HTTP2_RECEIVE_WINDOWS } from './helpers/internals'
import { makeSelfSignedCertificate } from './helpers/tls-fixture'
import { startConfiguredServer } from './helpers/cli-server'
import { connectHttp2Listener } from './helpers/cli-http2'
import { eventually } from './helpers/eventually'

test('server: HTTP/2 listeners grant clients a 1 MiB stream window and a 16 MiB connection window, so uploads through tunnels are not held to 64 KiB per round trip', async (t) => {
  const dir = t.testdir()
  const tls = await makeSelfSignedCertificate(dir)
  const listener = { host: '127.0.0.1', port: 0, tls: { cert: 'cert.pem', key: 'key.pem' }, http2: true }
  const server = await startConfiguredServer(t, { listen: [listener, listener] }, dir)
  t.same(HTTP2_RECEIVE_WINDOWS, { stream: 1024 * 1024, connection: 16 * 1024 * 1024 })
  for (const url of server.urls) {
    const session = await connectHttp2Listener(t, url, tls.cert)
    // The stream window comes in the server's SETTINGS frame, the connection window in a
    // WINDOW_UPDATE frame after it; either may still be on its way when 'connect' fires.
    await eventually(() => session.remoteSettings.initialWindowSize === HTTP2_RECEIVE_WINDOWS.stream)
    t.pass(`${url ?? ''}: stream window (SETTINGS)`)
    await eventually(() => session.state.remoteWindowSize === HTTP2_RECEIVE_WINDOWS.connection)
    t.pass(`${url ?? ''}: connection window (WINDOW_UPDATE)`)
  }
})
