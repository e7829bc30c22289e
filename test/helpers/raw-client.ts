import { connect, type Socket } from 'node:net'
import { once } from 'node:events'
import type { Test } from 'tap'
import { eventually } from './eventually'
import { within } from './within'

/**
 * Opens a TCP connection to 127.0.0.1:`port` and resolves once it is connected, for a test that
 * writes and reads raw bytes. Its errors are ignored (the test checks what arrives); it is
 * destroyed at teardown.
 */
export async function connectClient (t: Test, port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  socket.on('error', () => {})
  await once(socket, 'connect')
  return socket
}

/** A raw exchange: everything the server sent until it closed the connection. */
export interface RawExchange {
  text: string
  /** Status code of the first response line, or 0 when there was none. */
  status: number
}

/**
 * Sends `request` verbatim over a new TCP connection and collects the reply until the server
 * closes the connection (or `timeoutMs` passes, which fails loudly rather than hanging).
 */
export function rawExchange (port: number, request: string | Buffer, timeoutMs = 5000, host = '127.0.0.1'): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host)
    const chunks: Buffer[] = []
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no close within ${timeoutMs} ms; got: ${Buffer.concat(chunks).toString()}`)) }, timeoutMs)
    socket.on('connect', () => socket.write(request))
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      const text = Buffer.concat(chunks).toString('latin1')
      resolve({ text, status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0) })
    })
  })
}

/** An established CONNECT tunnel through the proxy. */
export interface OpenTunnel {
  socket: Socket
  /** The proxy's response head, e.g. `HTTP/1.1 200 Connection Established`. */
  head: string
  status: number
  /** Bytes received after the head (already from the destination). */
  rest: Buffer
}

/**
 * Sends a CONNECT and resolves once the response head has arrived (any status). With
 * `localAddress` (another loopback address), the connection comes from there.
 */
export function openTunnel (port: number, target: string, headers: Record<string, string> = {}, host = '127.0.0.1', localAddress?: string): Promise<OpenTunnel> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host, ...(localAddress === undefined ? {} : { localAddress }) })
    let buffered = Buffer.alloc(0)
    const lines = [`CONNECT ${target} HTTP/1.1`, `Host: ${target}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)]
    socket.on('connect', () => socket.write(`${lines.join('\r\n')}\r\n\r\n`))
    socket.on('error', reject)
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk])
      const end = buffered.indexOf('\r\n\r\n')
      if (end === -1) return
      socket.removeListener('data', onData)
      socket.removeListener('error', reject)
      socket.on('error', () => {})
      const head = buffered.subarray(0, end).toString('latin1')
      resolve({ socket, head, status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0), rest: buffered.subarray(end + 4) })
    }
    socket.on('data', onData)
    socket.on('close', () => reject(new Error(`closed before a response head; got: ${buffered.toString()}`)))
  })
}

/** Base64 Basic credentials for a `Proxy-Authorization` header. */
export function basic (user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
}

/** The `Retry-After` of a raw response head, in seconds, or null when it has none. */
export function retryAfterOf (head: string): number | null {
  const value = /\r\nretry-after: (\d+)\r\n/i.exec(head)?.[1]
  return value === undefined ? null : Number(value)
}

/**
 * Sends CONNECTs until one is answered 200 (a slot that comes back elsewhere, later) and
 * resolves with that tunnel; every other answer's connection is closed. Each attempt has
 * `attemptMs` to be answered (a connection nobody answers does not hold up the next); rejects
 * after `timeoutMs`.
 */
export async function openTunnelOnceAdmitted (
  port: number,
  target: string,
  headers: Record<string, string>,
  timeoutMs = 5000,
  attemptMs = 1000
): Promise<OpenTunnel> {
  let admitted: OpenTunnel | undefined
  await eventually(async () => {
    const attempt = await within(openTunnel(port, target, headers), 'an answer to the CONNECT', attemptMs).catch(() => undefined)
    if (attempt?.status === 200) admitted = attempt
    else attempt?.socket.destroy()
    return admitted !== undefined
  }, timeoutMs)
  return admitted as OpenTunnel
}
