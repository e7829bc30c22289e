import { createHash, randomBytes } from 'node:crypto'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { pipeline, Readable } from 'node:stream'
import type { Test } from 'tap'
import type { InterceptionPki } from './interception-pki'

/** 100 MiB. */
export const HUNDRED_MIB = 100 * 1024 * 1024

const CHUNK = 1024 * 1024

/** A body of random bytes produced as it is read, with the SHA-256 of what was produced. */
export interface RandomBody {
  readonly stream: Readable
  /** Bytes produced so far. */
  produced (): number
  /** SHA-256 (hex) of everything produced; call once the stream has ended. */
  digest (): string
}

/**
 * `size` random bytes in 1 MiB chunks, made only when the consumer asks for more (so a
 * stalled consumer holds the producer back), hashed as they are made. Nothing keeps the
 * chunks after they are handed on.
 */
export function randomBody (size: number): RandomBody {
  const hash = createHash('sha256')
  let produced = 0
  const stream = new Readable({
    highWaterMark: CHUNK,
    read () {
      if (produced >= size) {
        this.push(null)
        return
      }
      const chunk = randomBytes(Math.min(CHUNK, size - produced))
      produced += chunk.length
      hash.update(chunk)
      this.push(chunk)
    }
  })
  return { stream, produced: () => produced, digest: () => hash.digest('hex') }
}

/** What the large-body origin received in one upload. */
export interface ReceivedUpload {
  bytes: number
  sha256: string
}

/** What the large-body origin serves and how it reads. */
export interface LargeBodyOriginSetup {
  /** Served by `GET /download` with its Content-Length. */
  download?: { body: RandomBody, size: number }
  /**
   * For `PUT /upload`: once `pauseAfter` bytes have arrived the origin stops reading, calls
   * `whilePaused` with the bytes read so far, and reads on when the promise it returns resolves.
   */
  upload?: { pauseAfter: number, whilePaused: (bytesRead: number) => Promise<void> }
}

/**
 * Starts an HTTPS origin with the destination CA's leaf: `GET /download` streams the download
 * body (respecting backpressure); `PUT /upload` hashes the body as it arrives and answers
 * `{ bytes, sha256 }` as JSON. Nothing is buffered whole. Resolves with its port; closed at
 * teardown.
 */
export async function startLargeBodyOrigin (t: Test, pki: InterceptionPki, setup: LargeBodyOriginSetup): Promise<number> {
  const server = createHttpsServer({ cert: pki.originLeaf.cert, key: pki.originLeaf.key }, (req, res) => {
    const { download, upload } = setup
    if (req.method === 'GET' && req.url === '/download' && download !== undefined) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': download.size })
      pipeline(download.body.stream, res, () => {})
      return
    }
    if (req.method === 'PUT' && req.url === '/upload') {
      const hash = createHash('sha256')
      let bytes = 0
      let pausePending = upload !== undefined
      req.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        hash.update(chunk)
        if (pausePending && upload !== undefined && bytes >= upload.pauseAfter) {
          pausePending = false
          req.pause()
          void upload.whilePaused(bytes).then(() => req.resume())
        }
      })
      req.on('end', () => {
        const received: ReceivedUpload = { bytes, sha256: hash.digest('hex') }
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify(received))
      })
      return
    }
    res.statusCode = 404
    res.end()
  })
  server.on('tlsClientError', () => {})
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return (server.address() as AddressInfo).port
}

/** Bytes as MiB with one decimal, for messages. */
export function mib (bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}
