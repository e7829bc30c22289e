import type { Http2Stream } from 'node:http2'
import type { Duplex } from 'node:stream'
import { ConcurrencyLimit } from '../concurrency-limit'

/**
 * Counts open CONNECT tunnels against `maxConcurrentTunnels` and remembers their sockets (the
 * client's from admission, the destination's once dialed) so that closing the server tears
 * them down, connects in progress included. A slot is taken before the destination is dialed
 * (a connect in progress counts) and given back exactly once.
 */
export class TunnelRegistry {
  readonly #slots: ConcurrencyLimit
  readonly #open = new Set<Duplex>()

  constructor (maxConcurrentTunnels: number) {
    this.#slots = new ConcurrencyLimit(maxConcurrentTunnels)
  }

  /** Tunnels open or being opened. */
  get active (): number {
    return this.#slots.active
  }

  /**
   * Reserves a slot; returns a release function (idempotent), or null when the limit is reached.
   */
  tryReserve (): (() => void) | null {
    return this.#slots.tryReserve()
  }

  /** Tracks the streams of an open tunnel until they close. */
  track (...streams: Duplex[]): void {
    for (const stream of streams) {
      this.#open.add(stream)
      stream.once('close', () => this.#open.delete(stream))
    }
  }

  /**
   * Destroys every tracked tunnel stream (server shutdown). The HTTP/2 session an HTTP/2 tunnel
   * ran on is closed gracefully too (GOAWAY: its other streams finish, no new ones open): it
   * would otherwise outlive its tunnel, and Node 20's HTTP/2 server does not finish `close()`
   * while a session is open, idle or not.
   */
  destroyAll (): void {
    for (const stream of this.#open) {
      const { session } = stream as Partial<Http2Stream>
      stream.destroy()
      if (session !== undefined && !session.closed) session.close()
    }
    this.#open.clear()
  }
}
