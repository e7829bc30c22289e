import dns from 'node:dns'
import type { FastifyInstance } from 'fastify'

/**
 * Makes `dns.lookup('localhost', { all: true })` answer both loopback addresses (127.0.0.1 and
 * ::1), as many machines' resolvers do and this one's may not: Fastify binds one server per
 * address it gets, so a test can see the servers it binds besides `app.server`. Other lookups go
 * to the real resolver. Returns the function that puts the real lookup back.
 */
function answerLocalhostWithBothLoopbacks (): () => void {
  const realLookup = dns.lookup
  const bothLoopbacks = (...args: unknown[]): void => {
    const [host, options] = args
    const callback = args[args.length - 1] as (error: null, addresses: Array<{ address: string, family: number }>) => void
    if (host === 'localhost' && typeof options === 'object' && options !== null && (options as { all?: boolean }).all === true) {
      callback(null, [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }])
      return
    }
    Reflect.apply(realLookup, dns, args)
  }
  Object.assign(dns, { lookup: bothLoopbacks })
  return () => { Object.assign(dns, { lookup: realLookup }) }
}

/**
 * `app.listen` on localhost while localhost answers both loopback addresses, so Fastify binds a
 * secondary server (see {@link answerLocalhostWithBothLoopbacks}); the real lookup is back after.
 */
export async function listenOnBothLoopbacks (app: FastifyInstance): Promise<void> {
  const restoreLookup = answerLocalhostWithBothLoopbacks()
  try {
    await app.listen({ port: 0, host: 'localhost' })
  } finally {
    restoreLookup()
  }
}
