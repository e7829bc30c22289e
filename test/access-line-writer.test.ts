import { test } from 'tap'
import { ProxyAgent, request } from 'undici'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel } from './helpers/raw-client'
import { capturedLog } from './helpers/captured-log'
import { eventually } from './helpers/eventually'
import { writeAccessLinesWith } from './helpers/internals'

test('access line: a logger given an access line writer hands it every access line, its requests\' child loggers included, and writes none itself', async (t) => {
  const log = capturedLog()
  const written: Array<{ id: string | undefined, access: object, message: string }> = []
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } }, (app) => {
    writeAccessLinesWith(app.log, (request, access, message) => {
      written.push({ id: request.id, access, message })
    })
    app.addHook('onRequest', async (request) => { request.log.info('an application line') })
  }, { logger: log.logger })
  const agent = new ProxyAgent({ uri: proxy.url, proxyTunnel: false, token: basic('alice', 's3cret') })
  t.teardown(() => agent.close())
  const response = await request(`http://127.0.0.1:${origin.port}/through`, { dispatcher: agent })
  await response.body.dump()
  t.equal(response.statusCode, 200)
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${origin.port}`, { 'Proxy-Authorization': basic('alice', 's3cret') })
  t.equal(tunnel.status, 200)
  tunnel.socket.end()

  await eventually(() => written.length === 2)
  const [forwarded, closed] = written
  t.match(forwarded, { message: 'proxy access', access: { kind: 'forward', user: 'alice', method: 'GET', destination: `127.0.0.1:${origin.port}`, status: 200 } })
  t.match(closed, { message: 'tunnel closed', access: { kind: 'tunnel', tunnel: 'opaque', user: 'alice', status: 200 } })
  t.ok(written.every((entry) => /\S/.test(entry.id ?? '')), 'each with the request it is about')
  t.equal(log.access().length, 0, 'the logger itself wrote no access line')
  t.equal(log.lines().filter((line) => line.includes('an application line')).length, 2, 'the application\'s own lines still go to the logger')
})
