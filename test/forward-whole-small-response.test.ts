import { test } from 'tap'
import { connect } from 'node:net'
import { Readable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { startOrigin, startProxy } from './helpers/servers'
import { rawExchange } from './helpers/raw-client'
import { within } from './helpers/within'
import { deferred } from './helpers/deferred'

/** Records what kind of payload the application's onSend hook gets for each forwarded response. */
function payloadKinds (kinds: string[]) {
  return (app: FastifyInstance): void => {
    app.addHook('onSend', async (_request, _reply, payload) => {
      kinds.push(Buffer.isBuffer(payload) ? 'buffer' : payload instanceof Readable ? 'stream' : typeof payload)
      return payload
    })
  }
}

function headOf (text: string): string {
  return text.slice(0, text.indexOf('\r\n\r\n')).toLowerCase()
}

test('a response whose body arrives with its head is sent whole: onSend gets a Buffer, the client the destination\'s status, headers and body', async (t) => {
  const origin = await startOrigin(t, (_req, res) => {
    res.writeHead(201, { 'content-type': 'text/plain', 'x-origin': 'yes' })
    res.end('hello')
  })
  const kinds: string[] = []
  const proxy = await startProxy(t, {}, payloadKinds(kinds))
  const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 201)
  const head = headOf(answer.text)
  t.match(head, /\r\ncontent-type: text\/plain\r\n/)
  t.match(head, /\r\ncontent-length: 5(\r\n|$)/)
  t.match(head, /\r\nx-origin: yes(\r\n|$)/)
  t.notMatch(head, /transfer-encoding/)
  t.ok(answer.text.endsWith('\r\n\r\nhello'))
  t.same(kinds, ['buffer'])
})

test('a whole response without Content-Type is sent without one (none is added)', async (t) => {
  const origin = await startOrigin(t, (_req, res) => {
    res.writeHead(200, { 'content-length': '5' })
    res.end('plain')
  })
  const proxy = await startProxy(t)
  const answer = await rawExchange(proxy.port, `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  t.equal(answer.status, 200)
  t.notMatch(headOf(answer.text), /content-type/)
  t.ok(answer.text.endsWith('\r\n\r\nplain'))
})

test('a body that comes after its head streams: the head and the first bytes reach the client before the destination ends it', async (t) => {
  const clientHasFirstPart = deferred()
  const origin = await startOrigin(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('first-part;')
    void clientHasFirstPart.promise.then(() => res.end('second-part'))
  })
  const kinds: string[] = []
  const proxy = await startProxy(t, {}, payloadKinds(kinds))
  const socket = connect(proxy.port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  let received = ''
  const ended = new Promise<void>((resolve) => socket.once('end', resolve))
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1')
    if (received.includes('first-part;')) clientHasFirstPart.resolve()
  })
  socket.write(`GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nConnection: close\r\n\r\n`)
  await within(clientHasFirstPart.promise, 'the first part of the body at the client while the destination still holds the rest')
  await within(ended, 'the end of the response')
  t.match(received, /^HTTP\/1\.1 200 /)
  const first = received.indexOf('first-part;')
  t.ok(first > 0 && received.indexOf('second-part') > first, 'both parts, in order')
  t.same(kinds, ['stream'])
})
