import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { test } from 'tap'

// curl as the per-request suite's client (bench/compare/curl.mjs, BENCH_HTTP_CLIENT=curl): what it
// counts from curl's per-transfer lines, and a real curl run against loopback servers, so a
// change of curl's options or output that the counting would misread fails here, not in a
// benchmark's numbers.
interface CurlResult { requests: number, reqPerSec: number, p50: number, p99: number, errors: number, firstError: string | undefined }
interface CurlClient {
  parseCurlTransfers: (text: string, seconds: number) => CurlResult
  runCurl: (
    curlPath: string, url: string, proxyPort: number | undefined, duration: number, connections: number,
    options?: { proxyUser?: { name: string, password: string } }
  ) => Promise<CurlResult>
}
async function load (): Promise<CurlClient> {
  return await import(pathToFileURL(join(__dirname, '..', 'bench', 'compare', 'curl.mjs')).href) as CurlClient
}

test('bench curl client: counts 2xx transfers per second with their p50 and p99, and every other status as an error, the first with curl\'s message', async (t) => {
  const { parseCurlTransfers } = await load()
  const lines = [
    ...Array.from({ length: 98 }, (_, i) => `200 ${((i + 1) / 10000).toFixed(6)} `),
    '000 0.000120 Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn\'t connect to server',
    '407 0.000300 ',
    '204 0.100000 ',
    ''
  ].join('\n')
  const result = parseCurlTransfers(lines, 2)
  t.equal(result.requests, 99, '98 answers 200 and one 204')
  t.equal(result.reqPerSec, 49.5)
  t.equal(result.errors, 2, 'the failed transfer and the 407')
  t.equal(result.firstError, '000 Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn\'t connect to server')
  t.equal(result.p50, 5, 'the middle of the 99 times, in ms')
  t.equal(result.p99, 100, 'the slowest of 99 is the 99th percentile')
})

test('bench curl client: a real curl run counts the answers of a loopback server, and a proxy\'s 407 as errors', async (t) => {
  const { runCurl } = await load()
  const seen: string[] = []
  const server = createServer((req: IncomingMessage, res) => {
    seen.push(`${req.method ?? ''} ${req.url ?? ''} ${req.headers['proxy-authorization'] ?? '-'}`)
    if (req.url?.startsWith('http://') === true) res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"' }).end()
    else res.end('ok\n')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const { port } = server.address() as AddressInfo

  const direct = await runCurl('curl', `http://127.0.0.1:${port}/small`, undefined, 0.5, 4)
  t.ok(direct.requests > 0, `direct: ${direct.requests} answers counted`)
  t.equal(direct.errors, 0, 'nothing else on curl\'s output is taken for a failed transfer')
  t.ok(seen.length >= direct.requests, 'every answer counted reached the server')
  t.match(seen[0], /^GET \/small\?1 -$/, 'the first transfer asks for ?1')

  seen.length = 0
  const proxied = await runCurl('curl', 'http://127.0.0.1:9/small', port, 0.5, 2, { proxyUser: { name: 'bench', password: 'secret' } })
  t.equal(proxied.requests, 0)
  t.ok(proxied.errors > 0, `through the proxy: ${proxied.errors} transfers refused`)
  t.match(proxied.firstError, /^407/)
  t.match(seen[0], new RegExp(`^GET http://127\\.0\\.0\\.1:9/small\\?1 Basic ${Buffer.from('bench:secret').toString('base64')}$`), 'the credentials go in Proxy-Authorization from the first request on')
})
