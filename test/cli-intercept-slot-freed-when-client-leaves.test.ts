// The bin, configured as a user would (per-user tunnel limit, an operator CA from files, the
// destination named in interception.hosts, a metrics listener): a client that drops intercepted
// tunnels right after their TLS handshake gets every slot back at once, and the tunnel gauge
// goes back to 0. Each wait is far shorter than the tunnel idle timeout (5 minutes by default).
import { test } from 'tap'
import { request } from 'undici'
import { chmodSync, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { listeningUrls, runBin } from './helpers/cli-bin'
import { portOf } from './helpers/cli-server'
import { eventually } from './helpers/eventually'
import { startDroppableTls } from './helpers/intercepted-client'
import { startTlsOrigin } from './helpers/intercepting-proxy'
import { makeInterceptionPki } from './helpers/interception-pki'
import { basic, openTunnel } from './helpers/raw-client'

const AUTH = { 'Proxy-Authorization': basic('agent', 'agent-pw') }

/** The value of the intercepted-tunnel gauge (`forward_proxy_tunnel_active`) in a scrape, or -1 when absent. */
async function interceptedTunnelGauge (metricsUrl: string): Promise<number> {
  const scrape = await request(metricsUrl)
  const text = await scrape.body.text()
  const value = /\nforward_proxy_tunnel_active\{forward_proxy_tunnel_kind="intercepted",network_protocol_version="1\.1"\} (\d+)\n/.exec(text)?.[1]
  return value === undefined ? -1 : Number(value)
}

for (const alpn of ['h2', 'http/1.1']) {
  test(`bin: a user with maxConcurrentTunnels 3 whose client drops three intercepted tunnels (ALPN ${alpn}) right after the handshake, with close_notify and a reset, gets a fourth tunnel at once, and the tunnel gauge goes back to 0`, async (t) => {
    const pki = await makeInterceptionPki(t)
    const origin = await startTlsOrigin(t, pki)
    // Not t.testdir(): its name, made from this test's name, is too long for the file system.
    const dir = mkdtempSync(join(tmpdir(), 'cli-slot-freed-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    copyFileSync(pki.operatorCa.certPath, join(dir, 'ca.pem'))
    copyFileSync(pki.operatorCa.certPath.replace(/\.pem$/, '.key'), join(dir, 'ca.key'))
    chmodSync(join(dir, 'ca.key'), 0o600)
    const file = join(dir, 'proxy.json')
    writeFileSync(file, JSON.stringify({
      listen: [{ host: '127.0.0.1', port: 0 }],
      users: { agent: { password: 'agent-pw', maxConcurrentTunnels: 3 } },
      destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' },
      interception: { hosts: ['127.0.0.1'], ca: { cert: 'ca.pem', key: 'ca.key' }, trustedDestinationCa: pki.destinationCa.certPath },
      metrics: { port: 0 },
      log: { level: 'warn' }
    }))
    const bin = runBin(t, ['--config', file])
    const [url] = await listeningUrls(bin)
    const metricsUrl = /metrics: (http:\/\/\S+\/metrics)/.exec(bin.stdout())?.[1] ?? ''
    t.ok(metricsUrl, 'the summary names the metrics listener')
    const port = portOf(url)
    const target = `127.0.0.1:${origin.port}`

    for (let i = 0; i < 3; i++) {
      const tunnel = await openTunnel(port, target, AUTH)
      t.equal(tunnel.status, 200, `tunnel ${i + 1}`)
      const { tls, drop } = await startDroppableTls(tunnel, { ca: pki.operatorCa.cert, alpn: [alpn], holdFinished: true })
      t.equal(tls.alpnProtocol, alpn)
      drop()
    }
    // On a timeout the assertions below say what was left: the gauge and the fourth CONNECT's answer.
    await eventually(async () => await interceptedTunnelGauge(metricsUrl) === 0, 10_000).catch(() => {})
    t.equal(await interceptedTunnelGauge(metricsUrl), 0, 'the tunnel gauge is back to 0')
    const fourth = await openTunnel(port, target, AUTH)
    t.equal(fourth.status, 200, `the fourth CONNECT gets a slot (${fourth.head.split('\r\n')[0] ?? ''})`)
    fourth.socket.destroy()
    bin.child.kill('SIGTERM')
    t.equal(await bin.exited, 0)
  })
}
