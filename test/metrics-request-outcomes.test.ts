import { test } from 'tap'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { ProxyAgent, request } from 'undici'
import { installMetrics } from './helpers/metric-reader'
import { startOrigin, startProxy } from './helpers/servers'
import { basic, openTunnel, rawExchange } from './helpers/raw-client'
import { startTcpDestination } from './helpers/tcp-destination'
import { closedPort } from './helpers/closed-port'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin, interceptAll } from './helpers/intercepting-proxy'

test('metrics: every proxy request and tunnel counts once on forward_proxy.request.outcomes by kind and outcome; http:// forwarding counts forward_proxy.kind=forward on arrival', async (t) => {
  const installed = installMetrics(t)
  const origin = await startOrigin(t)
  const destination = await startTcpDestination(t)
  const closed = await closedPort()
  const proxy = await startProxy(t, {
    auth: { users: { alice: 's3cret' } },
    destinations: { allowPrivateNetworks: true, allowedPorts: [origin.port, destination.port, closed] }
  })
  const auth = basic('alice', 's3cret')
  const forward = (port: number, headers = `Proxy-Authorization: ${auth}\r\n`): Promise<{ status: number }> =>
    rawExchange(proxy.port, `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${headers}Connection: close\r\n\r\n`)

  t.equal((await forward(origin.port)).status, 200, 'answered by the destination')
  t.equal((await forward(origin.port, '')).status, 407, 'refused: no credentials')
  t.equal((await forward(1)).status, 403, 'refused: port not allowed')
  t.equal((await forward(closed)).status, 502, 'failed: nothing listens there')
  const tunnel = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`, { 'Proxy-Authorization': auth })
  t.teardown(() => tunnel.socket.destroy())
  t.equal(tunnel.status, 200, 'an opaque tunnel')
  const deniedTunnel = await openTunnel(proxy.port, '127.0.0.1:1', { 'Proxy-Authorization': auth })
  t.teardown(() => deniedTunnel.socket.destroy())
  t.equal(deniedTunnel.status, 403, 'a refused CONNECT')

  t.strictSame(await installed.sums('forward_proxy.requests'), {
    '{"forward_proxy.kind":"forward"}': 4,
    '{"forward_proxy.kind":"connect"}': 2
  }, 'each kind counted on arrival, whatever the answer')
  t.strictSame(await installed.sums('forward_proxy.request.outcomes'), {
    '{"forward_proxy.kind":"forward","forward_proxy.outcome":"answered"}': 1,
    '{"forward_proxy.kind":"forward","forward_proxy.outcome":"refused","forward_proxy.reason":"auth"}': 1,
    '{"forward_proxy.kind":"forward","forward_proxy.outcome":"refused","forward_proxy.reason":"destination_policy"}': 1,
    '{"forward_proxy.kind":"forward","forward_proxy.outcome":"failed","forward_proxy.reason":"destination_error"}': 1,
    '{"forward_proxy.kind":"connect","forward_proxy.outcome":"tunnel"}': 1,
    '{"forward_proxy.kind":"connect","forward_proxy.outcome":"refused","forward_proxy.reason":"destination_policy"}': 1
  })
})

test('metrics: an intercepted tunnel counts forward_proxy.kind=connect with outcome intercepted, and each request inside it kind intercepted with its outcome', async (t) => {
  const installed = installMetrics(t)
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const proxy = await startInterceptingProxy(t, pki, { interception: interceptAll(pki) })
  const agent = new ProxyAgent({ uri: proxy.url, connections: 1, requestTls: { ca: pki.operatorCa.cert } })
  t.teardown(() => agent.close())
  for (const path of ['/one', '/two']) {
    const response = await request(`https://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })
    t.equal(response.statusCode, 200, path)
    await response.body.dump()
  }
  t.strictSame(await installed.sums('forward_proxy.request.outcomes'), {
    '{"forward_proxy.kind":"connect","forward_proxy.outcome":"intercepted"}': 1,
    '{"forward_proxy.kind":"intercepted","forward_proxy.outcome":"answered"}': 2
  })
})

test('metrics: a body that stalls after the destination\'s 200 head (504 connection_read_timeout on the access line) counts as failed with reason destination_error, not refused', async (t) => {
  const installed = installMetrics(t)
  const sockets = new Set<Socket>()
  const stalling = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.once('data', () => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst bytes'))
  })
  await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); stalling.close(() => resolve()) }))
  const port = (stalling.address() as AddressInfo).port
  const proxy = await startProxy(t, { limits: { httpActivityTimeout: 300 } })
  const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 200, 'the head was out before the body stalled')
  // The client sees the cut before the proxy's onResponse has run: wait for the count itself.
  for (let tries = 0; tries < 250 && Object.keys(await installed.sums('forward_proxy.request.outcomes')).length === 0; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.strictSame(await installed.sums('forward_proxy.request.outcomes'), {
    '{"forward_proxy.kind":"forward","forward_proxy.outcome":"failed","forward_proxy.reason":"destination_error"}': 1
  })
})
