import { test } from 'tap'
import { once } from 'node:events'
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2'
import { connectHttp2, startHttp2Proxy } from './helpers/http2-proxy'
import { startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'

/** Sends an extended CONNECT (RFC 8441) once the server has announced support for it. */
async function extendedConnect (
  session: ClientHttp2Session,
  authority: string,
  path: string
): Promise<{ stream: ClientHttp2Stream, status: number, body: Promise<string> }> {
  if (session.remoteSettings.enableConnectProtocol !== true) await once(session, 'remoteSettings')
  const stream = session.request({ ':method': 'CONNECT', ':protocol': 'websocket', ':scheme': 'https', ':path': path, ':authority': authority })
  stream.on('error', () => {})
  const [headers] = await once(stream, 'response') as [Record<string, string>]
  stream.setEncoding('utf8')
  const body = new Promise<string>((resolve) => {
    let text = ''
    stream.on('data', (chunk: string) => { text += chunk })
    stream.once('end', () => resolve(text))
  })
  return { stream, status: Number(headers[':status']), body }
}

test('extended CONNECT (:protocol) is not a tunnel; it reaches the app\'s CONNECT route at its :path, and nothing is dialed', async (t) => {
  const sentinel = await startSentinel(t)
  const seen: Array<{ url: string, protocol: unknown, proxyDestination: unknown }> = []
  const proxy = await startHttp2Proxy(t, {}, (app) => {
    app.addHttpMethod('CONNECT')
    app.route({
      method: 'CONNECT',
      url: '/chat',
      handler: async (request, reply) => {
        seen.push({ url: request.url, protocol: request.headers[':protocol'], proxyDestination: request.proxyDestination })
        return reply.code(200).send('answered by the app')
      }
    })
  }, { settings: { enableConnectProtocol: true } })
  const session = await connectHttp2(t, proxy)

  const answered = await extendedConnect(session, `127.0.0.1:${sentinel.port}`, '/chat')
  t.equal(answered.status, 200)
  t.equal(await answered.body, 'answered by the app')
  t.same(seen, [{ url: '/chat', protocol: 'websocket', proxyDestination: null }], 'the app saw the path, not the authority, and no proxy destination')

  const unknown = await extendedConnect(session, `127.0.0.1:${sentinel.port}`, '/nowhere')
  t.equal(unknown.status, 404, 'a path with no app route gets the app\'s 404, not a tunnel')
  await unknown.body

  await expectNothingDialedBefore(t, sentinel.accepts, 'nothing dialed')
  t.equal(proxy.app.forwardProxy.activeTunnels, 0)
})
