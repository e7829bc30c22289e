/**
 * Resolves or rejects as `promise` does, but rejects after `ms` with "`what` did not happen within
 * `ms` ms", so a test waiting on an event that never comes fails at once with a message instead of
 * at the runner's 60-second limit.
 */
export async function within<T> (promise: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, expired])
  } finally {
    clearTimeout(timer)
  }
}
