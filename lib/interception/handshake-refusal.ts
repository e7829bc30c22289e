import type { Readable, Writable } from 'node:stream'

// A fatal handshake_failure alert (TLS record type 21, version 3.3, level 2, description 40),
// valid in plaintext before any ServerHello.
const HANDSHAKE_FAILURE_ALERT = Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])

// Longest time a refused handshake keeps draining the client's bytes after the alert.
const ALERT_LINGER_MS = 2000

/**
 * Fails a client's TLS handshake without TLS: sends a handshake_failure alert, ends the output,
 * and discards whatever the client still sends until it ends its side or two seconds have
 * passed (closing with unread bytes could reset the connection before the client reads the
 * alert); then calls `close`. Returns a function that cancels the wait, for a tunnel that
 * closes otherwise first.
 */
export function refuseClientHandshake (input: Readable, output: Writable, close: () => void): () => void {
  input.removeAllListeners('data')
  input.on('data', () => {})
  input.resume()
  const timer = setTimeout(close, ALERT_LINGER_MS)
  timer.unref()
  input.once('end', close)
  output.end(HANDSHAKE_FAILURE_ALERT)
  return () => {
    clearTimeout(timer)
    input.removeListener('end', close)
  }
}
