import type { OnReadOpts, Socket } from 'node:net'
import type { Writable } from 'node:stream'
import { borrowRelayBuffer, returnRelayBuffer, sharedReadBuffer } from './relay-buffers'

/**
 * Reads an opaque tunnel's destination socket through Node's `onread` option instead of
 * `'data'` events: no buffer is allocated per read, and while the destination streams, each
 * read takes up to 256 KiB (Node's own reads stop at 64 KiB), so a download costs fewer read
 * and write syscalls per byte. Created before the dial (`onread` is a `connect()` option) and
 * started by the relay.
 */
export interface DestinationReader {
  /** The `onread` option of the destination socket's `connect()`. */
  readonly onread: OnReadOpts
  /**
   * Relays what the destination sends to `output` from now on, calling `onBytes` with each
   * read's size; ends `output` when the destination ends. Backpressure: the destination is not
   * read while a write to `output` is unfinished.
   */
  start (destination: Socket, output: Writable, onBytes: (count: number) => void): void
}

/** A reader for one destination socket (see DestinationReader). */
export function createDestinationReader (): DestinationReader {
  let next = sharedReadBuffer
  let own: Buffer | undefined
  let ownWritePending = false
  // True while reading is stopped until the writes to the output are done.
  let waiting = false
  let destination: Socket | undefined
  let output: Writable | undefined
  let onBytes: (count: number) => void = () => {}
  // Bytes read before the relay started, copied out of the shared buffer.
  const early: Buffer[] = []

  const release = (reusable: boolean): void => {
    if (own === undefined) return
    returnRelayBuffer(own, reusable)
    own = undefined
    next = sharedReadBuffer
  }
  const resume = (): void => {
    if (!waiting || output === undefined || output.writableLength > 0) return
    waiting = false
    if (destination !== undefined && !destination.destroyed) destination.resume()
  }
  const afterWrite = (error?: Error | null): void => { if (error == null) resume() }
  const afterOwnWrite = (error?: Error | null): void => {
    ownWritePending = false
    if (error == null) resume()
    else release(false)
  }
  const wait = (): false => {
    waiting = true
    return false
  }

  const onread: OnReadOpts = {
    buffer: () => next,
    callback (count: number, buffer: Uint8Array): boolean {
      if (output === undefined) {
        early.push(Buffer.from(buffer.subarray(0, count)))
        return false
      }
      onBytes(count)
      if (output.destroyed) return false
      if (buffer === own) {
        // Written straight from the tunnel's own buffer: the next read must wait until the
        // kernel has taken all of it, or it would overwrite bytes still queued for writing.
        ownWritePending = true
        output.write(count === buffer.length ? buffer : buffer.subarray(0, count), afterOwnWrite)
        if (output.writableLength > 0) return wait()
        ownWritePending = false
        // A read that did not fill the buffer emptied the socket: the stream may be over, and
        // an idle tunnel holds no buffer of its own.
        if (count < buffer.length) release(true)
        return true
      }
      // A copy needs no wait for its write: the usual high-water mark applies, as with pipe().
      const belowHighWaterMark = output.write(Buffer.from(buffer.subarray(0, count)))
      if (count === buffer.length && own === undefined) {
        own = borrowRelayBuffer()
        if (own !== undefined) next = own
      }
      if (belowHighWaterMark) return true
      output.once('drain', resume)
      return wait()
    }
  }

  return {
    onread,
    start (socket, target, counter) {
      destination = socket
      output = target
      onBytes = counter
      const end = (): void => { if (!target.destroyed) target.end() }
      if (socket.readableEnded) end()
      else socket.once('end', end)
      socket.once('close', () => release(!ownWritePending))
      // Reading stopped at the first early read; it goes on once those bytes are written.
      waiting = true
      for (const chunk of early.splice(0)) {
        counter(chunk.length)
        target.write(chunk, afterWrite)
      }
      resume()
    }
  }
}
