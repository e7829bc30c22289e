import { createServer, type AddressInfo, type Socket } from 'node:net'
import type { Test } from 'tap'
import { deferred } from './deferred'

/**
 * A TCP destination on 127.0.0.1 that keeps its accepted connections in accept order with the
 * bytes each sent, and never answers. Loopback accepts in order, so "the first connection it got
 * is the probe's" proves that nothing dialed it before the probe: a negative check that waits on
 * the probe, never on a sleep.
 */
export interface OrderedDestination {
  readonly port: number
  /** Resolves once any connection was accepted. */
  readonly firstAccepted: Promise<void>
  /** Connections accepted so far. */
  readonly accepted: number
  /** Resolves with the accept-order index of the first connection whose bytes contain `text`. */
  indexOfSender (text: string): Promise<number>
}

/** Starts an {@link OrderedDestination}; closed at teardown. */
export async function startOrderedDestination (t: Test): Promise<OrderedDestination> {
  const received: string[] = []
  const sockets: Socket[] = []
  const listeners = new Set<() => void>()
  const firstAccepted = deferred()
  const server = createServer((socket) => {
    const index = sockets.push(socket) - 1
    received[index] = ''
    firstAccepted.resolve()
    socket.on('error', () => {})
    socket.on('data', (chunk: Buffer) => {
      received[index] += chunk.toString('latin1')
      for (const listener of listeners) listener()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); server.close(() => resolve()) }))
  return {
    port: (server.address() as AddressInfo).port,
    firstAccepted: firstAccepted.promise,
    get accepted () { return sockets.length },
    indexOfSender: (text) => new Promise((resolve) => {
      const check = (): void => {
        const index = received.findIndex((bytes) => bytes.includes(text))
        if (index >= 0) { listeners.delete(check); resolve(index) }
      }
      listeners.add(check)
      check()
    })
  }
}
