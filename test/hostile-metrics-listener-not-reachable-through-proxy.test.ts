import { test } from 'tap'
import { portOf, startConfiguredServer } from './helpers/cli-server'
import { openTunnel, rawExchange } from './helpers/raw-client'

const LOOP = /proxy-status: fastify-forward-proxy; error=proxy_loop_detected/i

test('the metrics listener is never reached through the proxy, even where loopback destinations are allowed', async (t) => {
  const server = await startConfiguredServer(t, {
    listen: [{ host: '127.0.0.1', port: 0 }],
    destinations: { allowedNetworks: ['127.0.0.0/8', '0.0.0.0/32'], allowedPorts: '*' },
    allowAnonymous: true,
    metrics: { port: 0 }
  })
  const proxyPort = portOf(server.urls[0])
  const metricsPort = portOf(server.metricsUrl)
  for (const host of ['127.0.0.1', '0']) {
    const scrape = await rawExchange(proxyPort, `GET http://${host}:${metricsPort}/metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(scrape.status, 508, `GET http://${host}:${metricsPort}/metrics`)
    t.match(scrape.text, LOOP)
    t.notMatch(scrape.text, /forward_proxy_requests_total/, 'no metric leaked')
  }
  const tunnel = await openTunnel(proxyPort, `127.0.0.1:${metricsPort}`)
  t.equal(tunnel.status, 508, 'CONNECT to the metrics port')
  tunnel.socket.destroy()
})
