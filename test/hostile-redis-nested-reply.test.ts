// A limit store that answers with a reply nested deeper than any parser's stack: a compromised
// Redis, or anyone on the path of a plain redis:// connection, sends it once. The Redis client
// must turn it into a failed connection, never an exception that ends the proxy's process.
import { test, type Test } from 'tap'
import { createServer, type Socket } from 'node:net'
import { rawExchange, basic } from './helpers/raw-client'
import { startOrigin, startProxy } from './helpers/servers'
import { eventually } from './helpers/eventually'

/** Levels of arrays in each reply: far past what a recursive parser's stack holds. */
const DEPTH = 100_000

interface NestingRedis {
  url: string
  /** Replies sent so far (one per chunk of commands received). */
  replies (): number
}

/** A TCP server on loopback that answers whatever it is sent with one array nested DEPTH deep. */
async function startNestingRedis (t: Test): Promise<NestingRedis> {
  const reply = Buffer.from('*1\r\n'.repeat(DEPTH) + ':1\r\n')
  let replies = 0
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    socket.on('data', () => {
      replies += 1
      socket.write(reply)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return { url: `redis://127.0.0.1:${address.port}/0`, replies: () => replies }
}

function get (port: number, target: string): Promise<{ status: number, text: string }> {
  return rawExchange(port, `GET ${target} HTTP/1.1\r\nHost: ${new URL(target).host}\r\nProxy-Authorization: ${basic('alice', 'alice-pw')}\r\nConnection: close\r\n\r\n`)
}

for (const onError of ['deny', 'allow'] as const) {
  test(`hostile Redis: a reply nested ${DEPTH.toLocaleString('en')} arrays deep does not end the proxy; the store counts as unavailable and onError '${onError}' decides (${onError === 'deny' ? '503 proxy_internal_error' : 'the request is forwarded, counted by this process'})`, async (t) => {
    const redis = await startNestingRedis(t)
    const origin = await startOrigin(t)
    const proxy = await startProxy(t, { auth: { users: { alice: { password: 'alice-pw', requestsPerMinute: 100 } } }, redis: { url: redis.url, onError, timeout: 200 } })
    // The client connects at registration: its first command has been answered with the nesting.
    await eventually(() => redis.replies() > 0, 5000)
    const target = `http://127.0.0.1:${origin.port}/`
    for (let attempt = 0; attempt < 3; attempt++) {
      const answer = await get(proxy.port, target)
      if (onError === 'deny') {
        t.equal(answer.status, 503, `attempt ${attempt + 1}: refused while the store cannot be used`)
        t.match(answer.text, /\r\nproxy-status: fastify-forward-proxy; error=proxy_internal_error/i)
      } else {
        t.equal(answer.status, 200, `attempt ${attempt + 1}: forwarded, counted by this process`)
      }
    }
    t.ok(redis.replies() > 0, 'the nested replies were sent')
  })
}
