/**
 * Resolves with `read()`'s value once it has stopped changing: the same value on every check,
 * 10 ms apart, for `quietMs`. For flows that stall on backpressure, where there is no event to
 * wait for. Rejects when it is still moving after `timeoutMs`.
 */
export async function settled (read: () => number, quietMs = 200, timeoutMs = 5000): Promise<number> {
  const deadline = Date.now() + timeoutMs
  let value = read()
  let since = Date.now()
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline) throw new Error(`still changing after ${timeoutMs} ms (now ${value})`)
    await new Promise((resolve) => setTimeout(resolve, 10))
    const next = read()
    if (next !== value) {
      value = next
      since = Date.now()
    }
  }
  return value
}
