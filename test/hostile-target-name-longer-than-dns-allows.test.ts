import { test } from 'tap'
import { startProxy, resolveToLoopback } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { canonicalHost } from './helpers/internals'

const label = (length: number): string => 'a'.repeat(length)
// 4 labels of 63 and "example": 263 characters, every label valid on its own.
const TOO_LONG = `${[label(63), label(63), label(63), label(63)].join('.')}.example`
const LABEL_TOO_LONG = `${label(64)}.example`

test('a target name longer than DNS allows (253 characters, or a label over 63) is 400 http_request_error over CONNECT and http://, never a failed dial', async (t) => {
  let resolved = 0
  const proxy = await startProxy(t, { resolver: async (name, signal) => { resolved++; return await resolveToLoopback(name, signal) } })
  for (const name of [TOO_LONG, LABEL_TOO_LONG]) {
    const tunnel = await rawExchange(proxy.port, `CONNECT ${name}:443 HTTP/1.1\r\nHost: x\r\n\r\n`)
    t.equal(tunnel.status, 400, `CONNECT ${name.length} characters`)
    t.match(tunnel.text, /proxy-status: [^\r\n]*error=http_request_error/i)
    const forwarded = await rawExchange(proxy.port, `GET http://${name}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(forwarded.status, 400, `GET http:// ${name.length} characters`)
    t.match(forwarded.text, /proxy-status: [^\r\n]*error=http_request_error/i)
  }
  t.equal(resolved, 0, 'no name was looked up')
})

test('names at DNS\'s limits stay valid: 253 characters, labels of 63, a trailing dot besides', async (t) => {
  const longest = `${[label(63), label(63), label(63), label(61)].join('.')}`
  t.equal(longest.length, 253)
  t.equal(canonicalHost(longest), longest)
  t.equal(canonicalHost(`${longest}.`), longest, 'the trailing dot does not count')
  t.equal(canonicalHost(`${longest}a`), null, '254 characters')
  t.equal(canonicalHost(`${label(63)}.example`), `${label(63)}.example`)
  t.equal(canonicalHost(LABEL_TOO_LONG), null)
})
