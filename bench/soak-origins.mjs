// The destinations of the soak run (bench/soak.mjs), in the soak's own process so clients can
// compare what they received with what the origin sent (SHA-256 recorded under a request id).
// - HTTP and HTTPS origins: GET /download?id=&size=[&chunked=1] sends `size` random bytes;
//   POST /upload answers the SHA-256 and length of the body; GET /sse?id=&events= streams
//   server-sent events; GET /reset?id=&size= sends half the body, then resets the connection.
// - A raw TCP origin for tunnels, one command line per connection: `GET id size` sends random
//   bytes then ends; `PUT id size` reads them and answers the hex SHA-256; `RST id size` sends
//   half then resets; `IDLE id` answers `ok` and then waits for the proxy to close the tunnel.
//   Every connection's last progress (bytes read or flushed here, bytes its client received) is
//   tracked, so the soak can see any tunnel kept open past the proxy's idle timeout.
import { createHash, randomBytes, randomInt } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createServer as createNetServer } from 'node:net'
import { drainedOrClosed } from './stream-events.mjs'

const CHUNK = 64 * 1024
const sha256 = (data) => createHash('sha256').update(data).digest('hex')

/** Writes `body` in chunks, honouring backpressure; `onProgress` after each flushed chunk. */
async function writeChunks (stream, body, onProgress = () => {}) {
  for (let offset = 0; offset < body.length && !stream.destroyed; offset += CHUNK) {
    const more = stream.write(body.subarray(offset, offset + CHUNK), onProgress)
    if (!more) await drainedOrClosed(stream)
  }
}

/** Sends a reset (RST) where the socket supports it, else just destroys it. */
function reset (socket) {
  if (typeof socket.resetAndDestroy === 'function' && socket._handle?.reset !== undefined) socket.resetAndDestroy()
  else socket.destroy()
}

/**
 * Starts the three origins on 127.0.0.1. `leaf` is the HTTPS origin's { keyPath, certPath }.
 * Returns their ports, `expected` (request id -> SHA-256 of what was sent) and the tunnel tracker.
 */
export async function startOrigins (leaf) {
  const expected = new Map()
  const handler = (request, response) => {
    const url = new URL(request.url, 'http://origin')
    const id = url.searchParams.get('id') ?? ''
    const size = Number(url.searchParams.get('size') ?? 0)
    request.on('error', () => {})
    response.on('error', () => {})
    if (url.pathname === '/upload') {
      const hash = createHash('sha256')
      let bytes = 0
      request.on('data', (chunk) => { hash.update(chunk); bytes += chunk.length })
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end(JSON.stringify({ sha256: hash.digest('hex'), bytes }))
      })
      return
    }
    request.resume()
    if (url.pathname === '/download') {
      const body = randomBytes(size)
      expected.set(id, sha256(body))
      const chunked = url.searchParams.get('chunked') === '1'
      response.writeHead(200, { 'content-type': 'application/octet-stream', ...(chunked ? {} : { 'content-length': size }) })
      writeChunks(response, body).then(() => response.end())
      return
    }
    if (url.pathname === '/reset') {
      const body = randomBytes(size)
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size })
      response.write(body.subarray(0, size >> 1), () => reset(request.socket))
      return
    }
    if (url.pathname === '/sse') {
      const events = Array.from({ length: Number(url.searchParams.get('events') ?? 10) }, () => `data: ${randomBytes(randomInt(16, 512)).toString('hex')}\n\n`)
      expected.set(id, sha256(events.join('')))
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      let index = 0
      const next = () => {
        if (response.destroyed) return
        if (index === events.length) { response.end(); return }
        response.write(events[index++])
        setTimeout(next, randomInt(1, 20))
      }
      next()
      return
    }
    response.writeHead(404).end()
  }
  const http = createHttpServer(handler)
  const https = createHttpsServer({ key: readFileSync(leaf.keyPath), cert: readFileSync(leaf.certPath) }, handler)
  for (const server of [http, https]) server.on('clientError', (_error, socket) => socket.destroy())

  const tunnels = new Set()
  const tunnelsById = new Map()
  const tcp = createNetServer((socket) => {
    const entry = { socket, lastProgress: Date.now(), overrun: false, command: '' }
    const progress = () => { entry.lastProgress = Date.now() }
    tunnels.add(entry)
    socket.on('error', () => {})
    socket.once('close', () => {
      tunnels.delete(entry)
      if (entry.overrun) process.stderr.write(`soak: the overrun tunnel ${entry.command} closed after ${Date.now() - entry.lastProgress} ms of silence\n`)
    })
    let head = Buffer.alloc(0)
    const onData = (data) => {
      progress()
      head = Buffer.concat([head, data])
      const end = head.indexOf(10)
      if (end === -1) return
      socket.removeListener('data', onData)
      const [command, id = '', sizeText = '0'] = head.subarray(0, end).toString('latin1').split(' ')
      entry.command = `${command} ${id} ${sizeText}`
      tunnelsById.set(id, entry)
      socket.once('close', () => tunnelsById.delete(id))
      const size = Number(sizeText)
      const rest = head.subarray(end + 1)
      if (command === 'GET') {
        const body = randomBytes(size)
        expected.set(id, sha256(body))
        socket.on('data', progress)
        writeChunks(socket, body, progress).then(() => socket.end())
      } else if (command === 'PUT') {
        const hash = createHash('sha256').update(rest)
        let bytes = rest.length
        socket.on('data', (chunk) => { progress(); hash.update(chunk); bytes += chunk.length })
        // The client half-closes after its last byte.
        socket.on('end', () => socket.end(`${hash.digest('hex')} ${bytes}\n`))
      } else if (command === 'RST') {
        socket.write(randomBytes(size >> 1), () => { progress(); reset(socket) })
      } else if (command === 'IDLE') {
        socket.on('data', progress)
        socket.write('ok\n', progress)
      } else {
        socket.destroy()
      }
    }
    socket.on('data', onData)
  })

  const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)))
  const ports = { http: await listen(http), https: await listen(https), tcp: await listen(tcp) }
  return {
    ports,
    expected,
    /**
     * Records progress seen by the client of tunnel `id` (bytes it received): data the origin
     * flushed long ago may still be moving from the proxy to a slow reader.
     */
    touch (id) {
      const entry = tunnelsById.get(id)
      if (entry !== undefined) entry.lastProgress = Date.now()
    },
    /** Open tunnel connections at the TCP origin. */
    openTunnels: () => tunnels.size,
    /**
     * Tunnels open with no progress for longer than `limit` ms, each counted once; returns how
     * many were newly found and the longest silence seen on a still-open tunnel.
     */
    checkIdle (limit) {
      const now = Date.now()
      const found = []
      let longest = 0
      for (const entry of tunnels) {
        const silence = now - entry.lastProgress
        longest = Math.max(longest, silence)
        if (silence > limit && !entry.overrun) {
          entry.overrun = true
          found.push(`${entry.command || '(no command)'}, read ${entry.socket.bytesRead} B, written ${entry.socket.bytesWritten} B, buffered ${entry.socket.writableLength} B`)
        }
      }
      return { found, longest }
    },
    close () {
      for (const entry of tunnels) entry.socket.destroy()
      for (const server of [http, https]) server.closeAllConnections()
      return Promise.all([http, https, tcp].map((server) => new Promise((resolve) => server.close(resolve))))
    }
  }
}
