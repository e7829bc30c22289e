import { test } from 'tap'
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import { proxyLoggerOptions, REDACTED, formatPrettyLine } from './helpers/internals'

function capture (): { stream: Writable, lines: () => string[] } {
  const lines: string[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString().split('\n').filter((line) => line !== ''))
      callback()
    }
  })
  return { stream, lines: () => lines }
}

test('server logger: pino redaction hides Authorization, Proxy-Authorization, Cookie, Set-Cookie and every header a header rule sets, at the top of an entry and one level down', async (t) => {
  const out = capture()
  const options = proxyLoggerOptions({ level: 'info', format: 'json' }, [{ hosts: ['api.example.com'], set: { 'X-Tenant-Secret': 'tenant-secret-value' } }])
  const app = Fastify({ ...options, logger: { ...options.logger, stream: out.stream } })
  t.teardown(() => app.close())
  const headers = {
    authorization: 'Bearer auth-secret',
    'proxy-authorization': 'Basic cHJveHktc2VjcmV0',
    cookie: 'session=cookie-secret',
    'set-cookie': 'id=set-cookie-secret',
    'x-tenant-secret': 'tenant-secret-value',
    accept: 'text/plain'
  }
  app.log.info({ headers }, 'top level')
  app.log.info({ upstream: { headers }, response: { headers } }, 'nested')
  app.log.info({ req: { headers } }, 'serialized request')
  const text = out.lines().join('\n')
  for (const secret of ['auth-secret', 'cHJveHktc2VjcmV0', 'cookie-secret', 'set-cookie-secret', 'tenant-secret-value']) {
    t.notOk(text.includes(secret), `${secret} redacted`)
  }
  const [top, nested] = out.lines().map((line) => JSON.parse(line) as Record<string, { [key: string]: Record<string, string> }>)
  t.equal(top?.headers?.authorization, REDACTED)
  t.equal(top?.headers?.accept, 'text/plain', 'other headers kept')
  t.equal(nested?.upstream?.headers?.['x-tenant-secret'], REDACTED)
  t.equal(nested?.response?.headers?.['set-cookie'], REDACTED)
})

test('server logger: redaction matches header names in any case, keeps an error an error, and never changes the objects logged', async (t) => {
  const out = capture()
  const options = proxyLoggerOptions({ level: 'info', format: 'json' })
  const app = Fastify({ ...options, logger: { ...options.logger, stream: out.stream } })
  t.teardown(() => app.close())
  const headers = { Authorization: 'Bearer mixed-case-secret', 'X-Api-Key': 'api-key-secret', Accept: 'text/plain' }
  const error = Object.assign(new TypeError('the destination refused'), { code: 'E_REFUSED', headers: { 'set-cookie': 'error-cookie-secret' } })
  const upstream = { status: 502, headers: { cookie: 'upstream-cookie-secret' } }
  app.log.info({ headers }, 'mixed case')
  app.log.error({ err: error, upstream }, 'failed')
  app.log.info({ access: { kind: 'forward', status: 200 } }, 'no headers')
  const text = out.lines().join('\n')
  for (const secret of ['mixed-case-secret', 'api-key-secret', 'error-cookie-secret', 'upstream-cookie-secret']) {
    t.notOk(text.includes(secret), `${secret} redacted`)
  }
  const [mixed, failed, plain] = out.lines().map((line) => JSON.parse(line) as Record<string, Record<string, unknown>>)
  t.same(mixed?.headers, { Authorization: REDACTED, 'X-Api-Key': REDACTED, Accept: 'text/plain' })
  t.equal(failed?.err?.type, 'TypeError', 'the error is logged as an error')
  t.equal(failed?.err?.message, 'the destination refused')
  t.match(String(failed?.err?.stack), /TypeError: the destination refused/)
  t.equal(failed?.err?.code, 'E_REFUSED')
  t.same(failed?.err?.headers, { 'set-cookie': REDACTED })
  t.same(failed?.upstream, { status: 502, headers: { cookie: REDACTED } })
  t.same(plain?.access, { kind: 'forward', status: 200 })
  t.equal(headers.Authorization, 'Bearer mixed-case-secret', 'the logged objects are unchanged')
  t.same(error.headers, { 'set-cookie': 'error-cookie-secret' })
  t.same(upstream.headers, { cookie: 'upstream-cookie-secret' })
})

test('server logger: a logged request shows its absolute target without userinfo; Fastify\'s own per-request lines are off', async (t) => {
  const out = capture()
  const options = proxyLoggerOptions({ level: 'info', format: 'json' })
  const app = Fastify({ ...options, logger: { ...options.logger, stream: out.stream } })
  t.teardown(() => app.close())
  app.get('/*', async (request) => {
    request.log.info({ req: { ...request, url: 'http://bob:url-secret@example.com/path?q=1', method: request.method, hostname: request.hostname, ip: request.ip, socket: request.socket } }, 'logged')
    return 'ok'
  })
  const response = await app.inject({ url: '/x' })
  t.equal(response.statusCode, 200)
  const entries = out.lines().map((line) => JSON.parse(line) as { msg: string, req?: { url?: string } })
  t.same(entries.map((entry) => entry.msg), ['logged'], 'no "incoming request" / "request completed" lines')
  t.equal(entries[0]?.req?.url, `http://${REDACTED}@example.com/path?q=1`)
})

test('server logger: format pretty writes time, level, message and flattened fields on one line', async (t) => {
  const line = formatPrettyLine(JSON.stringify({ level: 30, time: Date.UTC(2026, 10, 23, 9, 0, 0), pid: 1, hostname: 'h', reqId: 'req-1', access: { kind: 'forward', status: 200, destination: 'a.example:80', user: null }, msg: 'proxy access' }))
  t.equal(line, '2026-11-23T09:00:00.000Z INFO  proxy access reqId=req-1 access.kind=forward access.status=200 access.destination=a.example:80 access.user=null')
  t.equal(formatPrettyLine('not json'), 'not json')
})
