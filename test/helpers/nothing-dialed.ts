import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import type { IncomingMessage } from 'node:http'
import { connect, type AddressInfo, type Server, type Socket } from 'node:net'
import type { Test } from 'tap'
import { within } from './within'

/**
 * The connections a listener on loopback accepted, in accept order. Loopback queues connections
 * in the order they were made and the listener accepts them in that order, so "the first
 * connection accepted is the probe's" proves that nothing dialed the listener before the probe
 * was made: see {@link expectNothingDialedBefore}.
 */
export interface AcceptLog {
  /** The address the listener is bound to. */
  readonly host: string
  readonly port: number
  /** Connections accepted so far. */
  readonly accepted: number
  /**
   * Resolves with the accept-order index of the connection whose client port is `port`, once it
   * is accepted, looking only at connections from index `since` on (those accepted after a
   * connection was made can only come after the ones accepted before, whose ports may be reused).
   */
  indexOfRemotePort (port: number, since?: number): Promise<number>
  /**
   * Resolves with the accept-order index of the first connection that carried `marker`: in its
   * bytes for a raw TCP listener, in the target of a request on it for an HTTP or HTTPS server.
   */
  indexOfMarker (marker: string): Promise<number>
}

/**
 * Logs the connections `server` accepts, in accept order, with what each carried: its bytes
 * (`carries: 'bytes'`, for a raw TCP listener; this reads every accepted socket) or the targets
 * of the requests on it (`carries: 'requests'`, for an HTTP or HTTPS server, which reads its
 * sockets itself). Call it before the server listens.
 */
export function logAccepts (server: Server, carries: 'bytes' | 'requests'): AcceptLog {
  const remotePorts: Array<number | undefined> = []
  const carried: string[] = []
  const listeners = new Set<() => void>()
  const changed = (): void => { for (const listener of listeners) listener() }
  server.on('connection', (socket: Socket) => {
    const index = remotePorts.push(socket.remotePort) - 1
    carried[index] = ''
    if (carries === 'bytes') {
      socket.on('data', (chunk: Buffer) => {
        carried[index] += chunk.toString('latin1')
        changed()
      })
    }
    changed()
  })
  if (carries === 'requests') {
    server.on('request', (request: IncomingMessage) => {
      // The latest connection from that port: the one still open, which carries this request.
      const index = remotePorts.lastIndexOf(request.socket.remotePort)
      if (index >= 0) carried[index] += `${request.url ?? ''}\n`
      changed()
    })
  }
  const whenFound = (find: () => number): Promise<number> => new Promise((resolve) => {
    const check = (): void => {
      const index = find()
      if (index >= 0) {
        listeners.delete(check)
        resolve(index)
      }
    }
    listeners.add(check)
    check()
  })
  return {
    get host () { return (server.address() as AddressInfo).address },
    get port () { return (server.address() as AddressInfo).port },
    get accepted () { return remotePorts.length },
    indexOfRemotePort: (port, since = 0) => whenFound(() => remotePorts.indexOf(port, since)),
    indexOfMarker: (marker) => whenFound(() => carried.findIndex((text) => text.includes(marker)))
  }
}

/** How {@link expectNothingDialedBefore} makes its probe. */
export interface NothingDialedProbe {
  /**
   * Sends the probe through the proxy, carrying `marker` to the listener: in a tunnel's bytes
   * for a raw TCP listener, in a request target for an HTTP or HTTPS server. Without it the probe
   * is a TCP connection the test makes to the listener itself.
   */
  send?: (marker: string) => Promise<unknown>
  /** Connections the listener was rightly dialed for before the refused requests (default 0). */
  after?: number
}

/**
 * Proves that nothing dialed the listener behind `log` before a probe made now: a dial the proxy
 * made for an earlier, refused request, even one made after it answered, was accepted before the
 * probe and fails this (the probe's index is then past `after`). Call it once the client has the
 * whole refusal; a dial put off until after the probe arrives is not seen. Waits on the probe's
 * arrival at the listener, never on a timer (a probe that does not arrive fails the wait after
 * 10 s). Resolves with the assertion's result.
 */
export async function expectNothingDialedBefore (t: Test, log: AcceptLog, message = 'nothing was dialed', probe: NothingDialedProbe = {}): Promise<boolean> {
  const { send, after = 0 } = probe
  let index: number
  if (send === undefined) {
    const since = log.accepted
    const socket = connect(log.port, log.host)
    socket.on('error', () => {})
    try {
      await within(once(socket, 'connect'), 'the probe\'s connection to the destination')
      index = await within(log.indexOfRemotePort(socket.localPort ?? 0, since), 'the probe\'s arrival at the destination')
    } finally {
      socket.destroy()
    }
  } else {
    const marker = `nothing-dialed-probe-${randomUUID()}`
    const arrived = log.indexOfMarker(marker)
    await send(marker)
    index = await within(arrived, 'the probe\'s arrival at the destination')
  }
  return t.equal(index, after, message)
}
