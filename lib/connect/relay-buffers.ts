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
export const sharedReadBuffer: Buffer = Buffer.allocUnsafeSlow(RELAY_BUFFER_SIZE)

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
