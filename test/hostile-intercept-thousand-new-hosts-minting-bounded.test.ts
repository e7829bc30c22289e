import { t as file, test } from 'tap'
import { createCaCertificateProvider } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy } from './helpers/intercepting-proxy'
import { openTunnel, type OpenTunnel } from './helpers/raw-client'
import { startInnerTls, tunnelTransport } from './helpers/intercepted-client'
import { eventually } from './helpers/eventually'

// About 6 s of CPU on an idle machine (1,100 leaves minted, 2,000 connections); the file's
// 60 s limit is raised so a machine shared with other jobs does not turn it into a failure.
file.setTimeout(240_000)

const HOSTS = 1000
const CACHE_SIZE = 100
// Long enough that no tunnel waiting for its handshake is closed, however loaded the machine.
const HANDSHAKE_TIMEOUT = 300_000
const host = (index: number): string => `host-${index}.example`

/** Opens a CONNECT tunnel to `<name>:443` for every name, all at once, and keeps them open. */
async function openTunnels (proxyPort: number, names: readonly string[]): Promise<OpenTunnel[]> {
  return await Promise.all(names.map(async (name) => await openTunnel(proxyPort, `${name}:443`)))
}

/** Runs a TLS handshake in `tunnel` checking that the leaf names `name`, then closes both. */
async function handshake (tunnel: OpenTunnel, name: string, ca: Buffer): Promise<'verified' | Error> {
  const inner = await startInnerTls(tunnelTransport(tunnel), { ca, servername: name }).catch((error: Error) => error)
  if (!(inner instanceof Error)) inner.destroy()
  tunnel.socket.destroy()
  return inner instanceof Error ? inner : 'verified'
}

test('1,000 new intercepted hosts at once: each host is minted once, the leaf cache never holds more than its bound, clients get leaves for their own names, and every tunnel slot comes back', async (t) => {
  const pki = await makeInterceptionPki(t)
  const minted: string[] = []
  let largestCache = 0
  const provider = createCaCertificateProvider({
    cert: pki.operatorCa.cert,
    key: pki.operatorCa.key,
    cacheSize: CACHE_SIZE,
    onLeafIssued: (leaf) => {
      minted.push(leaf.host)
      largestCache = Math.max(largestCache, provider.cacheSize)
    }
  })
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { resolver: async () => [{ address: '192.0.2.1', family: 4 }] },
    interception: { certificateProvider: provider, selector: { shouldIntercept: () => true }, handshakeTimeout: HANDSHAKE_TIMEOUT },
    backlog: 2 * HOSTS
  })
  const names = Array.from({ length: HOSTS }, (_, index) => host(index))
  const tunnels = await openTunnels(proxy.port, names)
  t.ok(tunnels.every((tunnel) => tunnel.status === 200), '1,000 intercepted tunnels open together')
  // Handshakes in the first and the last tunnels opened: the first hosts' leaves have long left
  // the 100-host cache by now, yet each tunnel presents the leaf for its own host.
  const sample = [...tunnels.keys()].filter((index) => index < 5 || index >= HOSTS - 5)
  const outcomes = await Promise.all(sample.map(async (index) => await handshake(tunnels[index] as OpenTunnel, names[index] ?? '', pki.operatorCa.cert)))
  t.same(outcomes, sample.map(() => 'verified'), 'clients verified leaves naming their own hosts')
  await eventually(() => minted.length >= HOSTS, 50_000)
  t.equal(minted.length, HOSTS, 'one mint per host, none repeated')
  t.same(new Set(minted), new Set(names), 'exactly the hosts asked for')
  t.ok(largestCache <= CACHE_SIZE, `the cache never held more than ${CACHE_SIZE} hosts (largest ${largestCache})`)
  for (const tunnel of tunnels) tunnel.socket.destroy()
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0, 10_000)
  t.pass('every tunnel slot came back')
})

test('1,000 new intercepted hosts at once against maxConcurrentTunnels 100: at most 100 leaves are minted, the others get 503 connection_limit_reached before any mint', async (t) => {
  const pki = await makeInterceptionPki(t)
  let mints = 0
  const provider = createCaCertificateProvider({ cert: pki.operatorCa.cert, key: pki.operatorCa.key, onLeafIssued: () => { mints++ } })
  const proxy = await startInterceptingProxy(t, pki, {
    proxy: { resolver: async () => [{ address: '192.0.2.1', family: 4 }], limits: { maxConcurrentTunnels: 100 } },
    interception: { certificateProvider: provider, selector: { shouldIntercept: () => true }, handshakeTimeout: HANDSHAKE_TIMEOUT },
    backlog: 2 * HOSTS
  })
  // Every CONNECT is sent at once and the accepted tunnels stay open, so 900 find every slot taken.
  const names = Array.from({ length: HOSTS }, (_, index) => host(index))
  const tunnels = await openTunnels(proxy.port, names)
  const accepted = tunnels.flatMap((tunnel, index) => tunnel.status === 200 ? [{ tunnel, name: names[index] ?? '' }] : [])
  t.equal(accepted.length, 100, '100 tunnels accepted')
  t.ok(tunnels.every((tunnel) => tunnel.status === 200 || (tunnel.status === 503 && /proxy-status: fastify-forward-proxy; error=connection_limit_reached/i.test(tunnel.head))), 'the others got 503 connection_limit_reached')
  const first = accepted[0]
  if (first !== undefined) t.equal(await handshake(first.tunnel, first.name, pki.operatorCa.cert), 'verified', 'an accepted tunnel gets its leaf')
  for (const tunnel of tunnels) tunnel.socket.destroy()
  t.ok(mints <= 100, `${mints} leaves minted, no more than the tunnels accepted`)
  await eventually(() => proxy.app.forwardProxy.activeTunnels === 0, 10_000)
})
