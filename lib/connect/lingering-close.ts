import type { Socket } from 'node:net'

/** Longest time a refused CONNECT's connection keeps draining the client's bytes after the answer. */
export const LINGER_TIMEOUT_MS = 2000

/**
 * Closes a connection whose CONNECT was answered with an error, after the answer is written:
 * sends FIN, then reads and discards (never parses) whatever the client still sends until it
 * closes or `lingerMs` passes. Closing with unread bytes would make the kernel send a TCP RST,
 * which can destroy the error response before the client reads it (RFC 9112 section 9.6).
 */
export function lingeringClose (socket: Socket, lingerMs = LINGER_TIMEOUT_MS): void {
  if (socket.destroyed) return
  const timer = setTimeout(() => socket.destroy(), lingerMs)
  timer.unref()
  socket.once('close', () => clearTimeout(timer))
  socket.once('end', () => socket.destroy())
  socket.removeAllListeners('data')
  socket.on('data', () => {})
  // Paused while the CONNECT waited (early bytes past their bound): drain from here on.
  socket.resume()
  socket.end()
}
