// Client primitives of the soak run (bench/soak.mjs): HTTP/1.1 and HTTP/2 CONNECT tunnels to
// the proxy, http:// requests through it, and body readers that hash what arrives, optionally
// as a slow reader. Everything a call opens is handed to `ctx.track` so the watchdog of a hung
// operation can destroy it.
import { createHash } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { connect as netConnect } from 'node:net'
import { readConnectResponse } from './connect-response.mjs'
import { drainedOrClosed } from './stream-events.mjs'

/**
 * Opens an HTTP/1.1 CONNECT tunnel. Resolves { socket } on 200, or { status, head } when the
 * proxy refused (the socket is then destroyed).
 */
export async function openH1Tunnel (proxyPort, authority, ctx) {
  const socket = ctx.track(netConnect(proxyPort, '127.0.0.1'))
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`)
  const { status, head } = await readConnectResponse(socket)
  if (status === 200) return { socket }
  socket.destroy()
  return { status, head }
}

/** Opens an HTTP/2 CONNECT stream on `session`: { socket: stream } on 200, else { status, head }. */
export function openH2Tunnel (session, authority, ctx) {
  return new Promise((resolve, reject) => {
    const stream = ctx.track(session.request({ ':method': 'CONNECT', ':authority': authority }))
    stream.on('error', () => {})
    const onClose = () => reject(new Error(`stream closed before a response (code ${stream.rstCode})`))
    stream.once('close', onClose)
    stream.once('response', (headers) => {
      stream.removeListener('close', onClose)
      const status = Number(headers[':status'])
      if (status === 200) { resolve({ socket: stream }); return }
      stream.destroy()
      resolve({ status, head: `${status} ${headers['proxy-status'] ?? ''}` })
    })
  })
}

/**
 * Reads `stream` to its end, hashing it. `slow`: pause 20 ms after every chunk (a reader much
 * slower than the origin); `onData` is called for every chunk. Resolves { sha256, bytes, completed }, where `completed` means the
 * stream ended cleanly (no error, no reset).
 */
export function readAll (stream, { slow = false, limit = Infinity, onData = () => {} } = {}) {
  return new Promise((resolve) => {
    const hash = createHash('sha256')
    let bytes = 0
    let ended = false
    let failed = false
    let settled = false
    const finish = () => {
      if (settled) return
      settled = true
      resolve({ sha256: hash.digest('hex'), bytes, completed: ended && !failed })
    }
    stream.on('data', (chunk) => {
      // Chunks after a `limit` stop (the caller then destroys the stream) are not counted.
      if (settled) return
      hash.update(chunk)
      bytes += chunk.length
      onData()
      if (bytes >= limit) { finish(); return }
      if (slow) {
        stream.pause()
        setTimeout(() => stream.resume(), 20)
      }
    })
    stream.once('end', () => { ended = true; finish() })
    stream.once('aborted', () => { failed = true })
    stream.once('error', () => { failed = true; finish() })
    stream.once('close', finish)
    stream.resume()
  })
}

/** Writes `body` in 64 KiB chunks honouring backpressure, then ends (half-closes) the stream. */
export async function writeBody (stream, body) {
  for (let offset = 0; offset < body.length && !stream.destroyed; offset += 65536) {
    if (!stream.write(body.subarray(offset, offset + 65536))) {
      await drainedOrClosed(stream)
    }
  }
  stream.end()
}

/**
 * An http:// request through the proxy (absolute-form target). Resolves { response } once the
 * response head arrived; `body` (a Buffer) is sent as the request body.
 */
export function forwardRequest (proxyPort, agent, method, url, ctx, body) {
  return new Promise((resolve, reject) => {
    const target = new URL(url)
    const request = ctx.track(httpRequest({
      host: '127.0.0.1',
      port: proxyPort,
      method,
      path: url,
      agent,
      headers: { host: target.host, ...(body === undefined ? {} : { 'content-length': body.length }) }
    }))
    request.once('response', (response) => { response.on('error', () => {}); resolve({ response, request }) })
    request.once('error', reject)
    if (body === undefined) request.end()
    else writeBody(request, body).catch(reject)
  })
}
