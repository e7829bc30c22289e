// Stream waits shared by the bench clients and origins.

/** Resolves on the stream's next 'drain' or 'close', whichever comes first. */
export function drainedOrClosed (stream) {
  return new Promise((resolve) => {
    const done = () => {
      stream.removeListener('drain', done)
      stream.removeListener('close', done)
      resolve()
    }
    stream.once('drain', done)
    stream.once('close', done)
  })
}
