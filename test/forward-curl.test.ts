import { test } from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { startOrigin, startProxy } from './helpers/servers'

const run = promisify(execFile)
const CURL = '/usr/bin/curl'

/** Runs curl with no proxy settings from the environment and never any configuration file. */
async function curl (args: string[]): Promise<{ status: number, body: string }> {
  const { stdout } = await run(CURL, ['-q', '--silent', '--show-error', '--max-time', '10', '--write-out', '\n%{http_code}', ...args], {
    env: { PATH: process.env.PATH ?? '' }
  })
  const cut = stdout.lastIndexOf('\n')
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) }
}

test('clients: curl -x forwards an http:// request', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t)
  const res = await curl(['-x', proxy.url, `http://127.0.0.1:${origin.port}/x?y=1`])
  t.equal(res.status, 200)
  const echo = JSON.parse(res.body) as { url: string, headers: Record<string, string | undefined> }
  t.equal(echo.url, '/x?y=1')
  t.equal(echo.headers.via, '1.1 fastify-forward-proxy')
  t.equal(echo.headers['proxy-connection'], undefined, 'curl\'s Proxy-Connection is hop-by-hop')
})

test('clients: curl -x with credentials authenticates; the credentials never reach the origin', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const res = await curl(['-x', `http://alice:s3cret@127.0.0.1:${proxy.port}`, `http://127.0.0.1:${origin.port}/x`])
  t.equal(res.status, 200)
  t.equal(origin.requests.length, 1)
  const raw = JSON.stringify(origin.requests[0]?.rawHeaders)
  t.notMatch(raw, /proxy-authorization/i)
  t.notMatch(raw, /s3cret|YWxpY2U6czNjcmV0/)
})
