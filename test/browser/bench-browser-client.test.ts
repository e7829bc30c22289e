import { test } from 'tap'
import { spawnSync } from 'node:child_process'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

// Headless Chromium as the per-request suite's client (bench/compare/browser.mjs,
// BENCH_HTTP_CLIENT=chromium), run for real against a loopback server that plays the proxy: it
// wants Basic credentials and answers the absolute-form requests itself. Needs Debian's Chromium
// (.ci/run installs it); without it the test fails, it does not skip.
interface BrowserResult { requests: number, reqPerSec: number, p50: number, p99: number, errors: number, firstError: string | undefined }
interface BrowserClient {
  runBrowser: (
    chromiumPath: string, url: string, proxyPort: number | undefined, duration: number, connections: number,
    options?: { proxyUser?: { name: string, password: string } }
  ) => Promise<BrowserResult>
}
async function load (): Promise<BrowserClient> {
  return await import(pathToFileURL(join(__dirname, '..', '..', 'bench', 'compare', 'browser.mjs')).href) as BrowserClient
}

const AUTHORIZATION = `Basic ${Buffer.from('bench:secret').toString('base64')}`

test('bench browser client: Chromium answers the proxy\'s 407 once, then sends the credentials unasked; every answer of the page\'s fetch loop is counted', async (t) => {
  if (spawnSync('sh', ['-c', 'command -v chromium']).status !== 0) {
    t.fail('chromium is not on PATH: this test needs Debian\'s Chromium (apt-get install -y chromium), which .ci/run installs')
    return
  }
  const { runBrowser } = await load()
  const seen: Array<{ url: string, authorized: boolean }> = []
  const proxy = createServer((req: IncomingMessage, res) => {
    const authorized = req.headers['proxy-authorization'] === AUTHORIZATION
    seen.push({ url: req.url ?? '', authorized })
    if (!authorized) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"', 'content-length': '0' }).end()
      return
    }
    // Chromium's own background requests (which no flag turns off) get a 403, as from the bin.
    if (req.url?.startsWith('http://127.0.0.1:8081/') !== true) {
      res.writeHead(403, { 'content-length': '0' }).end()
      return
    }
    // Every tenth fetch fails, as a destination's error would.
    if (/\?\d*0$/.test(req.url ?? '')) {
      res.writeHead(503, { 'content-length': '0' }).end()
      return
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '3' }).end('ok\n')
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { proxy.closeAllConnections(); proxy.close() })
  const { port } = proxy.address() as AddressInfo

  const result = await runBrowser('chromium', 'http://127.0.0.1:8081/small', port, 1, 8, { proxyUser: { name: 'bench', password: 'secret' } })
  const page = seen.filter((s) => s.url.startsWith('http://127.0.0.1:8081/small'))
  const fetches = page.filter((s) => s.url.includes('?'))
  t.ok(result.requests > 0, `${result.requests} answers 200 counted`)
  t.equal(result.errors, fetches.filter((s) => s.url.endsWith('0')).length, 'every 503 counted as an error')
  t.equal(result.firstError, '503')
  t.equal(result.requests + result.errors, fetches.length, 'every fetch the proxy saw was counted once (the loop waits for the ones in flight)')
  t.ok(fetches.every((s) => s.authorized), 'every fetch came with the credentials, unasked')
  t.ok(page.filter((s) => !s.authorized).length <= 1, 'the proxy asked for them once at most: the page\'s own load')
  t.match(page.find((s) => s.url.includes('?'))?.url, /\?1$/, 'the first fetch asks for ?1')
  t.ok(result.p50 > 0 && result.p99 >= result.p50, `p50 ${result.p50} ms, p99 ${result.p99} ms`)
})
