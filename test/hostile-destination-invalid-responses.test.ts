import { test, type Test } from 'tap'
import { createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { gzipSync } from 'node:zlib'

const TOKEN = 'Bearer echoed-credential-6d1f0a'

/**
 * A destination that answers each request as `answer` says, from the request head it read: what
 * to write, and whether the head goes out in a write of its own before the rest.
 */
async function startRawDestination (t: Test, answer: (head: string) => { head: string, rest?: string }): Promise<number> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.once('close', () => sockets.delete(socket))
    let received = ''
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1')
      if (!received.includes('\r\n\r\n')) return
      const { head, rest } = answer(received)
      received = ''
      if (rest === undefined) socket.write(head)
      // The rest comes in a later read, after the proxy has the head.
      else socket.write(head, () => setTimeout(() => socket.write(rest), 20))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); server.close(() => resolve()) }))
  return (server.address() as AddressInfo).port
}

/** Fastify's logger writing into an array, every level. */
function capturedLog (): { lines: string[], logger: { level: string, stream: { write: (line: string) => void } } } {
  const lines: string[] = []
  return { lines, logger: { level: 'trace', stream: { write: (line) => { lines.push(line) } } } }
}

function authorizationOf (head: string): string {
  return /^authorization: (.*)$/im.exec(head)?.[1]?.trim() ?? ''
}

for (const split of [false, true]) {
  test(`a destination's unparsable body is 502 http_protocol_error, and the bytes it quoted (a credential it echoed) are in no log line${split ? ' (the body in a later read)' : ''}`, async (t) => {
    const port = await startRawDestination(t, (head) => {
      const badChunk = `zz ${authorizationOf(head)}\r\n`
      const responseHead = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n'
      return split ? { head: responseHead, rest: badChunk } : { head: responseHead + badChunk }
    })
    const log = capturedLog()
    // What an application's own error hook would see, and might log.
    const seenByHooks: unknown[] = []
    const proxy = await startProxy(t, {}, (app) => { app.addHook('onError', async (_request, _reply, error) => { seenByHooks.push(error) }) }, { logger: log.logger })
    const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}/echo HTTP/1.1\r\nHost: x\r\nAuthorization: ${TOKEN}\r\nConnection: close\r\n\r\n`)
    t.equal(answer.status, 502)
    t.equal(seenByHooks.length, 1, 'the application\'s error hook saw the failure')
    const cause = (seenByHooks[0] as Error | undefined)?.cause
    t.ok(cause instanceof Error, 'with undici\'s error as its cause')
    t.notOk(JSON.stringify(cause, Object.getOwnPropertyNames(cause ?? {})).includes('echoed-credential'), 'which no longer quotes the bytes it could not parse')
    t.match(answer.text, /proxy-status: [^\r\n]*error=http_protocol_error/i)
    t.notOk(answer.text.includes('echoed-credential'), 'nothing of it reaches the client')
    t.ok(log.lines.length > 0, 'the proxy logged')
    t.notOk(log.lines.some((line) => line.includes('echoed-credential')), 'no log line holds the echoed credential')
  })
}

test('a destination status above 599 is 502 http_protocol_error with details "invalid status code", not a 500', async (t) => {
  const port = await startRawDestination(t, () => ({ head: 'HTTP/1.1 600 Odd\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi' }))
  const proxy = await startProxy(t)
  for (const path of ['/a', '/b']) {
    const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(answer.status, 502, path)
    t.match(answer.text, /proxy-status: [^\r\n]*error=http_protocol_error; details="invalid status code"/i)
  }
})

test('a destination 204 is passed on without the Content-Length it must not carry', async (t) => {
  const port = await startRawDestination(t, () => ({ head: 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\nX-Kept: yes\r\n\r\n' }))
  const proxy = await startProxy(t)
  const answer = await rawExchange(proxy.port, `DELETE http://127.0.0.1:${port}/item HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 204)
  t.match(answer.text, /x-kept: yes/i, 'the rest of the head is passed on')
  t.notMatch(answer.text, /content-length/i)
  t.notMatch(answer.text, /transfer-encoding/i)
})

for (const [what, head] of [
  ['an unasked 100 Continue', 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi'],
  ['a 101 to a request without Upgrade', 'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n']
] as const) {
  test(`a destination answering ${what} is 502 http_protocol_error (undici does not take it), not connection_terminated`, async (t) => {
    const port = await startRawDestination(t, () => ({ head }))
    const proxy = await startProxy(t)
    const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    t.equal(answer.status, 502)
    t.match(answer.text, /proxy-status: [^\r\n]*error=http_protocol_error/i)
  })
}

test('a destination answering in a transfer coding other than chunked (gzip, chunked; gzip alone) gets 502 http_response_transfer_coding, nothing of its body sent: the client would get compressed bytes labelled as plain', async (t) => {
  const gzipped = gzipSync('compressed body the client would read as plain')
  const port = await startRawDestination(t, (head) => {
    const lone = head.startsWith('GET /lone')
    const coding = lone ? 'gzip' : 'GZIP , chunked'
    const body = lone ? gzipped : Buffer.concat([Buffer.from(`${gzipped.length.toString(16)}\r\n`), gzipped, Buffer.from('\r\n0\r\n\r\n')])
    return { head: `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: ${coding}\r\n${lone ? 'Connection: close\r\n' : ''}\r\n${body.toString('latin1')}` }
  })
  const proxy = await startProxy(t)
  for (const path of ['/both', '/lone']) {
    const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${port}${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)
    t.equal(answer.status, 502, path)
    t.match(answer.text, /\r\nproxy-status: fastify-forward-proxy; error=http_response_transfer_coding; details="transfer coding other than chunked"\r\n/i, path)
    t.notOk(answer.text.includes(gzipped.subarray(0, 10).toString('latin1')), `${path}: none of the body`)
  }
  const chunked = await startRawDestination(t, () => ({ head: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n' }))
  const plain = await rawExchange(proxy.port, `GET http://127.0.0.1:${chunked}/ HTTP/1.1\r\nHost: 127.0.0.1:${chunked}\r\nConnection: close\r\n\r\n`)
  t.equal(plain.status, 200, 'chunked alone, in any case, is still read')
  t.match(plain.text, /\r\n\r\n(2\r\n)?ok/)
})
