import { test } from 'tap'
import { X509Certificate } from 'node:crypto'
import { ProxyAgent, request } from 'undici'
import { createCaCertificateProvider, type ForwardProxyIssuedLeaf } from '../lib/index'
import { makeInterceptionPki } from './helpers/interception-pki'
import { startInterceptingProxy, startTlsOrigin } from './helpers/intercepting-proxy'
import { openInterceptedTls } from './helpers/intercepted-client'

test('certificates: undici trusting only the operator CA gets through an intercepted tunnel whose leaves createCaCertificateProvider mints (one leaf per host, reused by later tunnels)', async (t) => {
  const pki = await makeInterceptionPki(t)
  const origin = await startTlsOrigin(t, pki)
  const issued: ForwardProxyIssuedLeaf[] = []
  const provider = createCaCertificateProvider({
    cert: pki.operatorCa.cert,
    key: pki.operatorCa.key,
    onLeafIssued: (leaf) => issued.push(leaf)
  })
  const proxy = await startInterceptingProxy(t, pki, { interception: { certificateProvider: provider, selector: { shouldIntercept: () => true } } })

  for (const path of ['/first', '/second']) {
    // A new agent per round: a new tunnel, so a new handshake served from the provider's cache.
    const agent = new ProxyAgent({ uri: proxy.url, requestTls: { ca: pki.operatorCa.cert } })
    const response = await request(`https://127.0.0.1:${origin.port}${path}`, { dispatcher: agent })
    const echoed = await response.body.json() as { url: string }
    t.equal(response.statusCode, 200, `${path}: the minted leaf validated against the operator CA alone`)
    t.equal(echoed.url, path)
    await agent.close()
  }
  t.equal(issued.length, 1, 'one leaf minted for 127.0.0.1, reused by the second tunnel')
  t.equal(issued[0]?.host, '127.0.0.1')
  t.equal(origin.requests.length, 2)

  // What the client was shown: the minted leaf for the CONNECT host, issued by the operator CA.
  const inner = await openInterceptedTls(t, proxy.port, `127.0.0.1:${origin.port}`, { ca: pki.operatorCa.cert })
  const peer = inner.getPeerCertificate()
  inner.destroy()
  const leaf = new X509Certificate(peer.raw)
  t.ok(leaf.checkIssued(new X509Certificate(pki.operatorCa.cert)), 'issued by the operator CA')
  t.equal(leaf.checkIP('127.0.0.1'), '127.0.0.1', 'names the CONNECT host as an IP SAN')
  t.equal(leaf.serialNumber, issued[0]?.serialNumber, 'the cached leaf, not a new one')
})
