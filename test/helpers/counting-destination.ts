import { createServer, type AddressInfo, type Socket } from 'node:net'
import type { Test } from 'tap'
import { logAccepts, type AcceptLog } from './nothing-dialed'

/** A TCP destination that counts the connections it accepted and those still open. */
export interface CountingDestination {
  port: number
  /** Connections accepted so far. */
  readonly accepted: number
  /** Connections accepted and not yet closed (by the proxy, as the destination never closes). */
  readonly open: number
  /** The connections it accepted, in order, with their bytes (to prove that nothing dialed it before a probe). */
  readonly accepts: AcceptLog
}

/**
 * Starts a TCP destination on 127.0.0.1 that reads and discards whatever it gets and never
 * closes a connection itself, so `open` counts the upstream sockets the proxy still holds.
 * Closed at teardown.
 */
export async function startCountingDestination (t: Test): Promise<CountingDestination> {
  const sockets = new Set<Socket>()
  let accepted = 0
  const server = createServer((socket) => {
    accepted++
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
    socket.resume()
  })
  const accepts = logAccepts(server, 'bytes')
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const socket of sockets) socket.destroy(); server.close(() => resolve()) }))
  return {
    port: (server.address() as AddressInfo).port,
    accepts,
    get accepted () { return accepted },
    get open () { return sockets.size }
  }
}
