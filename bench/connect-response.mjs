// Reads a proxy's answer to a CONNECT head already written on a socket: shared by the load,
// tunnel, comparison and soak clients.

/**
 * Resolves { status, head } once the response head to a CONNECT has arrived on `socket`; any
 * bytes after the head are put back on the (paused) socket. Rejects if the socket errors or
 * closes first.
 */
export function readConnectResponse (socket) {
  return new Promise((resolve, reject) => {
    let head = Buffer.alloc(0)
    const stop = () => {
      socket.removeListener('data', onData)
      socket.removeListener('error', onError)
      socket.removeListener('close', onClose)
    }
    const onData = (data) => {
      head = Buffer.concat([head, data])
      const end = head.indexOf('\r\n\r\n')
      if (end === -1) return
      stop()
      socket.on('error', () => {})
      socket.pause()
      if (head.length > end + 4) socket.unshift(head.subarray(end + 4))
      const text = head.subarray(0, end).toString('latin1')
      resolve({ status: Number(text.slice(9, 12)), head: text })
    }
    const onError = (error) => { stop(); reject(error) }
    const onClose = () => { stop(); reject(new Error('the proxy closed the connection before answering CONNECT')) }
    socket.on('data', onData)
    socket.once('error', onError)
    socket.once('close', onClose)
  })
}
