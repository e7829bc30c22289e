/**
 * Waits until `condition` holds, checking every 10 ms, for state that settles on another
 * socket's events (a slot released after both sides closed). Rejects after `timeoutMs`.
 */
export async function eventually (condition: () => boolean | Promise<boolean>, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
