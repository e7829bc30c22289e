import { createServer, type AddressInfo, type Socket } from 'node:net'
import type { Test } from 'tap'
import { within } from './within'
import { openTunnel } from './raw-client'

/** A raw TCP destination on 127.0.0.1 that hands each accepted socket to the test. */
export interface TcpDestination {
  port: number
  /** Resolves with the next accepted connection. */
  nextConnection (): Promise<Socket>
}

/** Starts a raw TCP destination with half-open sockets allowed (to observe FIN separately). */
export async function startTcpDestination (t: Test): Promise<TcpDestination> {
  const waiting: Array<(socket: Socket) => void> = []
  const accepted: Socket[] = []
  const sockets: Socket[] = []
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => {})
    sockets.push(socket)
    const waiter = waiting.shift()
    if (waiter === undefined) accepted.push(socket)
    else waiter(socket)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { for (const s of sockets) s.destroy(); server.close(() => resolve()) }))
  return {
    port: (server.address() as AddressInfo).port,
    nextConnection: () => {
      const ready = accepted.shift()
      return ready === undefined ? new Promise((resolve) => waiting.push(resolve)) : Promise.resolve(ready)
    }
  }
}

/** Resolves once `socket` emits `event`; rejects with a message if it has not within `ms`. */
export function once (socket: Socket, event: string, ms = 10_000): Promise<void> {
  return within(new Promise((resolve) => socket.once(event, () => resolve())), `the socket's '${event}'`, ms)
}

/** Reads `socket` until it ends or closes; resolves with the text. */
export function readAll (socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    let done = false
    const finish = (): void => { if (!done) { done = true; resolve(text) } }
    socket.on('data', (chunk: Buffer) => { text += chunk.toString() })
    socket.once('end', finish)
    socket.once('close', finish)
  })
}

/**
 * Sends `text` from the client's end of a tunnel, has the destination's end echo it, and
 * resolves once the echo is back: the tunnel relays both ways.
 */
export async function echoesThrough (client: Socket, upstream: Socket, text: string): Promise<void> {
  const echoed = once(client, 'data')
  upstream.once('data', (chunk: Buffer) => upstream.write(chunk))
  client.write(text)
  await echoed
}

/**
 * Opens a CONNECT through the proxy on `proxyPort` to `target` (served by `destination`),
 * checks it is answered 200 (`opened` names that check), has the destination send a few bytes
 * and end, checks the client reads exactly them, and closes the tunnel.
 */
export async function expectTunnelRelays (
  t: Test,
  proxyPort: number,
  target: string,
  destination: TcpDestination,
  opened: string,
  headers: Record<string, string> = {}
): Promise<void> {
  const tunnel = await openTunnel(proxyPort, target, headers)
  t.equal(tunnel.status, 200, opened)
  const upstream = await destination.nextConnection()
  upstream.end('through')
  t.equal(await readAll(tunnel.socket), 'through')
  tunnel.socket.end()
  await once(tunnel.socket, 'close')
}
