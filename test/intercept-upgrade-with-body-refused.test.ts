import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import type { TLSSocket } from 'node:tls'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, interceptAll } from './helpers/intercepting-proxy'
import { openInterceptedTls, rawTlsExchange } from './helpers/intercepted-client'
import { startWebSocketOrigin } from './helpers/websocket-origin'

/** The head's bytes up to the blank line, for a socket that stays open after a 101. */
function headOf (socket: TLSSocket): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
      const end = text.indexOf('\r\n\r\n')
      if (end !== -1) resolve(text.slice(0, end))
    })
  })
}

test('an upgrade request announcing a body inside an intercepted tunnel gets 400 http_request_error (WebSocket or h2c), and nothing reaches the destination', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startWebSocketOrigin(t, pki, 0)
  let connections = 0
  origin.server.on('connection', () => { connections += 1 })
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const target = `127.0.0.1:${origin.port}`
  const key = (): string => randomBytes(16).toString('base64')

  const heads = {
    'a WebSocket handshake with Content-Length': [
      'GET /ws HTTP/1.1', `Host: ${target}`, 'Connection: Upgrade', 'Upgrade: websocket',
      'Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${key()}`, 'Content-Length: 5'
    ],
    'an h2c upgrade with Transfer-Encoding': [
      'POST /h2c HTTP/1.1', `Host: ${target}`, 'Connection: Upgrade, HTTP2-Settings', 'Upgrade: h2c',
      'HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA', 'Transfer-Encoding: chunked'
    ]
  }
  for (const [name, lines] of Object.entries(heads)) {
    const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
    const body = lines.includes('Content-Length: 5') ? 'hello' : '5\r\nhello\r\n0\r\n\r\n'
    const answer = await rawTlsExchange(socket, `${lines.join('\r\n')}\r\n\r\n${body}`)
    t.equal(answer.status, 400, `${name}: 400`)
    t.match(answer.head, /\r\nproxy-status: [^\r]*error=http_request_error[^\r]*details="upgrade request with a body"/i, `${name}: Proxy-Status names the error`)
    t.notMatch(answer.head, /\r\nupgrade:/i, `${name}: no Upgrade in the answer`)
  }

  // A handshake without a body still reaches the destination: the refusals above were not a
  // broken relay, and the destination's connection count shows they never dialed it.
  const socket = await openInterceptedTls(t, proxy.port, target, { ca: pki.operatorCa.cert })
  const head = headOf(socket)
  socket.write(`GET /ws HTTP/1.1\r\nHost: ${target}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key()}\r\n\r\n`)
  t.match(await head, /^HTTP\/1\.1 101 /, 'the handshake without a body is relayed')
  socket.destroy()
  t.same(origin.upgrades.map((seen) => seen.url), ['/ws'], 'the destination saw only the handshake without a body')
  t.equal(connections, 1, 'one connection to the destination, the relayed handshake\'s')
})
