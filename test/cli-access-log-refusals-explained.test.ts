import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { listeningUrls, runBin, type BinProcess } from './helpers/cli-bin'
import { basic, rawExchange } from './helpers/raw-client'
import { closedPort } from './helpers/closed-port'
import { eventually } from './helpers/eventually'

/** The `reqId` and `access` object of every access line the bin has written so far. */
function accessLines (bin: BinProcess): Array<{ reqId: string, access: Record<string, unknown> }> {
  return bin.stdout().split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return []
    const entry = JSON.parse(line) as { reqId?: string, access?: Record<string, unknown> }
    return entry.access === undefined ? [] : [{ reqId: entry.reqId ?? '', access: entry.access }]
  })
}

/** The `error=` of a raw response's Proxy-Status header. */
function proxyStatusError (response: string): string | undefined {
  return /^proxy-status: [^;\r\n]+; error=([a-z_]+)/im.exec(response)?.[1]
}

test('bin access log: every error the proxy answers is explained on its line (a reason, and the errorType its Proxy-Status names, 407 included), and a 400 for a request target the router cannot decode gets a line too', async (t) => {
  const closed = await closedPort()
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { alice: 's3cret' },
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'info' }
  }))
  const bin = runBin(t, ['--config', file])
  const [url] = await listeningUrls(bin)
  const port = Number(new URL(url ?? '').port)
  const alice = `Proxy-Authorization: ${basic('alice', 's3cret')}\r\n`
  const exchange = async (head: string): Promise<{ status: number, error: string | undefined }> => {
    const { status, text } = await rawExchange(port, `${head}\r\nConnection: close\r\n\r\n`)
    return { status, error: proxyStatusError(text) }
  }

  const answers = [
    await exchange(`GET http://127.0.0.1:${closed}/ HTTP/1.1\r\nHost: 127.0.0.1:${closed}`),
    await exchange(`GET http://127.0.0.1:${closed}/ HTTP/1.1\r\nHost: 127.0.0.1:${closed}\r\nProxy-Authorization: ${basic('alice', 'wrong')}`),
    await exchange(`GET http://127.0.0.1:${closed}/ HTTP/1.1\r\nHost: 127.0.0.1:${closed}\r\n${alice.trimEnd()}`),
    await exchange(`GET http://127.0.0.1%zz/ HTTP/1.1\r\nHost: 127.0.0.1\r\n${alice.trimEnd()}`),
    await exchange(`CONNECT 127.0.0.1:0 HTTP/1.1\r\nHost: 127.0.0.1:0\r\n${alice.trimEnd()}`)
  ]
  t.strictSame(answers.map((answer) => answer.status), [407, 407, 502, 400, 400])

  await eventually(() => accessLines(bin).length >= answers.length, 5000).catch(() => {})
  const lines = accessLines(bin)
  t.equal(lines.length, answers.length, 'one access line per answer, the router\'s 400 included')
  lines.forEach(({ access }, index) => {
    const answer = answers[index]
    t.equal(access.status, answer?.status, `line ${index} is the answer ${String(answer?.status)}`)
    t.equal(access.errorType, answer?.error, `line ${index}: errorType is the error its Proxy-Status names`)
    t.type(access.reason, 'string', `line ${index}: the refusal or failure is explained`)
    t.not(access.reason, '', `line ${index}: with a reason that says something`)
  })
  t.match(lines[0]?.access, { kind: 'forward', user: null, decision: 'deny', rule: 'auth', errorType: 'http_request_denied' }, 'missing credentials')
  t.match(lines[1]?.access, { user: null, decision: 'deny', rule: 'auth', reason: 'invalid credentials', errorType: 'http_request_denied' }, 'wrong credentials')
  t.match(lines[2]?.access, { user: 'alice', decision: 'allow', errorType: 'connection_refused', reason: /refused the connection/ }, 'a failure the rules allowed is explained too')
  t.match(lines[3]?.access, { kind: 'forward', method: 'GET', destination: null, decision: 'deny', rule: 'request', reason: 'bad request target', errorType: 'http_request_error', status: 400 }, 'the request target Fastify\'s router refused')
  t.match(lines[4]?.access, { kind: 'connect', decision: 'deny', rule: 'request', reason: 'bad CONNECT target' })
  t.notMatch(bin.stdout(), /s3cret|%zz/, 'neither the password nor the bad target is written')
})
