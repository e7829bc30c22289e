// A tunnel slot is freed when its client leaves, whatever stage the TLS and HTTP set-up inside
// the intercepted tunnel reached: a client that opens tunnels, completes the handshake (ALPN h2
// or http/1.1) and leaves must not keep the user's slots until the idle timeout (5 minutes by
// default). Each wait below is far shorter than the idle timeout the proxy runs with.
import type { ServerResponse } from 'node:http'
import { connect as http2Connect, type ClientHttp2Session } from 'node:http2'
import { once } from 'node:events'
import type { TLSSocket } from 'node:tls'
import { test, type Test } from 'tap'
import { eventually } from './helpers/eventually'
import { startDroppableTls, startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { interceptEverything, type InterceptingSetup } from './helpers/intercepted-forwarding'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { basic, openTunnel } from './helpers/raw-client'

const AUTH = { 'Proxy-Authorization': basic('agent', 'agent-pw') }
const IDLE_TIMEOUT = 300_000

/** A proxy intercepting every tunnel; user `agent` may hold 3 tunnels at once. */
async function setUp (t: Test) {
  const setup = await interceptEverything(t, {}, {
    auth: { users: { agent: { password: 'agent-pw', maxConcurrentTunnels: 3 } } },
    limits: { tunnelIdleTimeout: IDLE_TIMEOUT }
  })
  const origin = await startTlsOrigin(t, setup.pki)
  return { ...setup, target: `127.0.0.1:${origin.port}` }
}

for (const alpn of ['h2', 'http/1.1']) {
  for (const leave of ['end', 'destroy'] as const) {
    test(`three intercepted tunnels whose client completes TLS (ALPN ${alpn}) and leaves at once (${leave === 'end' ? 'FIN' : 'close'}) give their slots back: a fourth CONNECT gets 200`, async (t) => {
      const { proxy, pki, target } = await setUp(t)
      for (let i = 0; i < 3; i++) {
        const tunnel = await openTunnel(proxy.port, target, AUTH)
        t.equal(tunnel.status, 200, `tunnel ${i + 1}`)
        const tls = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert, alpn: [alpn] })
        t.equal(tls.alpnProtocol, alpn)
        if (leave === 'end') tls.end()
        else tls.destroy()
        tunnel.socket[leave]()
      }
      await eventually(() => proxy.app.forwardProxy.activeTunnels === 0, 10_000)
      const fourth = await openTunnel(proxy.port, target, AUTH)
      t.equal(fourth.status, 200, fourth.head)
      fourth.socket.destroy()
    })
  }
}

test('an intercepted tunnel whose client leaves after an HTTP/2 request was answered gives its slot back', async (t) => {
  const { proxy, pki, target } = await setUp(t)
  const tunnel = await openTunnel(proxy.port, target, AUTH)
  t.equal(tunnel.status, 200)
  const tls = await startInnerTls(tunnelTransport(tunnel), { ca: pki.operatorCa.cert, alpn: ['h2'] })
  const session = http2Connect(`https://${target}`, { createConnection: () => tls })
  session.on('error', () => {})
  const stream = session.request({ ':path': '/one' })
  stream.resume()
  const [headers] = await once(stream, 'response') as [Record<string, unknown>]
  t.equal(headers[':status'], 200)
  await once(stream, 'end')
  tunnel.socket.destroy()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0, 10_000)
  t.pass('the slot was given back')
})

/** An origin that holds every answer until `answerAll()`; `waiting()` counts the requests held. */
async function startHoldingOrigin (t: Test, setup: InterceptingSetup) {
  const held: ServerResponse[] = []
  const origin = await startTlsOrigin(t, setup.pki, (_req, res) => { held.push(res) })
  return {
    target: `127.0.0.1:${origin.port}`,
    waiting: () => held.length,
    answerAll: () => { for (const res of held.splice(0)) res.end('late') }
  }
}

/** Opens an HTTP/2 session over an established inner TLS socket and waits for the SETTINGS exchange. */
async function http2Session (tls: TLSSocket, target: string): Promise<ClientHttp2Session> {
  const session = http2Connect(`https://${target}`, { createConnection: () => tls })
  session.on('error', () => {})
  await once(session, 'connect')
  return session
}

// Go's Transport drops a spare connection this way (close_notify, then a close with the proxy's
// bytes unread, which resets it): the proxy's next write on the tunnel fails, and Node's TLS
// layer keeps that write pending without reporting an error.
const STAGES = {
  'right after the handshake': ['h2', 'http/1.1'],
  'after the HTTP/2 preface and SETTINGS exchange': ['h2'],
  'while a request waits for the origin\'s answer': ['h2', 'http/1.1']
} as const

const DROPS = {
  reset: 'sends close_notify and resets the connection',
  'fin-then-reset': 'sends close_notify and FIN, then resets the connection,'
} as const

for (const [stage, protocols] of Object.entries(STAGES)) {
  for (const alpn of protocols) {
    for (const [how, what] of Object.entries(DROPS) as Array<[keyof typeof DROPS, string]>) {
      test(`three intercepted tunnels (ALPN ${alpn}) whose client ${what} ${stage} give their slots back: a fourth CONNECT gets 200`, async (t) => {
        const setup = await interceptEverything(t, {}, {
          auth: { users: { agent: { password: 'agent-pw', maxConcurrentTunnels: 3 } } },
          limits: { tunnelIdleTimeout: IDLE_TIMEOUT }
        })
        const { proxy, pki } = setup
        const origin = await startHoldingOrigin(t, setup)
        const handshakeOnly = stage === 'right after the handshake'
        for (let i = 0; i < 3; i++) {
          const tunnel = await openTunnel(proxy.port, origin.target, AUTH)
          t.equal(tunnel.status, 200, `tunnel ${i + 1}`)
          const { tls, drop } = await startDroppableTls(tunnel, { ca: pki.operatorCa.cert, alpn: [alpn], holdFinished: handshakeOnly })
          t.equal(tls.alpnProtocol, alpn)
          if (stage === 'after the HTTP/2 preface and SETTINGS exchange') {
            await http2Session(tls, origin.target)
          } else if (!handshakeOnly) {
            if (alpn === 'h2') {
              const stream = (await http2Session(tls, origin.target)).request({ ':path': '/held' })
              stream.on('error', () => {})
            } else {
              tls.write(`GET /held HTTP/1.1\r\nHost: ${origin.target}\r\n\r\n`)
            }
            await eventually(() => origin.waiting() === i + 1, 10_000)
          }
          drop(how)
        }
        // The origin answers only once every client has left: the proxy writes to gone clients.
        origin.answerAll()
        await eventually(() => proxy.app.forwardProxy.activeTunnels === 0, 10_000)
        const fourth = await openTunnel(proxy.port, origin.target, AUTH)
        t.equal(fourth.status, 200, fourth.head)
        fourth.socket.destroy()
      })
    }
  }
}
