// Reads an opaque tunnel's destination socket through Node's `onread` option, into shared and
// borrowed buffers, for the relay.

import type { OnReadOpts, Socket } from 'node:net'
import type { Writable } from 'node:stream'

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
  /**
   * The destination has closed (the relay's `'close'` listener calls this): gives back the
   * buffer the reader borrowed and lets go of the relay's streams and counter.
   */
  stop (): void
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
  let onBytes: (count: number) => void = ignoreCount
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
      else socket.on('end', end)
      // Reading stopped at the first early read; it goes on once those bytes are written.
      waiting = true
      for (const chunk of early.splice(0)) {
        counter(chunk.length)
        target.write(chunk, afterWrite)
      }
      resume()
    },
    stop () {
      release(!ownWritePending)
      // The socket keeps these read callbacks as long as it lives (see letGoOfSocket in relay.ts): without
      // the relay's streams and counter they hold nothing of the tunnel.
      destination = undefined
      output = undefined
      onBytes = ignoreCount
    }
  }
}

/**
 * The read buffers of opaque tunnels' destination sockets. A tunnel whose destination is
 * streaming (its reads fill the buffer) borrows a large buffer of its own, so each read and
 * write syscall moves up to RELAY_BUFFER_SIZE bytes with no allocation; every other read goes
 * into one buffer shared by all tunnels and is copied out. A buffer is borrowed only while its
 * tunnel streams and at most MAX_BORROWED at a time, so idle tunnels hold none and a burst of
 * streaming tunnels costs at most MAX_BORROWED × RELAY_BUFFER_SIZE.
 */

/** Bytes per read syscall of a streaming tunnel (Node's own reads are at most 64 KiB). */
export const RELAY_BUFFER_SIZE = 256 * 1024
/** Most buffers lent at once (16 MiB); beyond it a streaming tunnel reads into the shared buffer. */
const MAX_BORROWED = 64
/** Most returned buffers kept for the next streaming tunnel. */
const MAX_FREE = 8

const free: Buffer[] = []
let borrowed = 0

/**
 * The buffer every non-streaming read goes into. Reads run one at a time on the event loop, so
 * sharing it is safe as long as nothing still refers to it after the read callback: the reader
 * copies what it read before writing it on.
 */
const sharedReadBuffer: Buffer = Buffer.allocUnsafeSlow(RELAY_BUFFER_SIZE)

/** A buffer of RELAY_BUFFER_SIZE bytes for one streaming tunnel, or undefined when MAX_BORROWED are out. */
export function borrowRelayBuffer (): Buffer | undefined {
  if (borrowed >= MAX_BORROWED) return undefined
  borrowed++
  return free.pop() ?? Buffer.allocUnsafeSlow(RELAY_BUFFER_SIZE)
}

/**
 * Gives a borrowed buffer back. `reusable` is false when a write may still refer to its memory
 * (the tunnel was torn down with a write pending): it is then left to the garbage collector.
 */
export function returnRelayBuffer (buffer: Buffer, reusable: boolean): void {
  borrowed--
  if (reusable && free.length < MAX_FREE) free.push(buffer)
}

/** How many buffers are lent to streaming tunnels now (for tests and diagnostics). */
export function borrowedRelayBuffers (): number {
  return borrowed
}

function ignoreCount (): void {}
