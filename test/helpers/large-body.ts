import { createHash, randomBytes } from 'node:crypto'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { pipeline, Readable } from 'node:stream'
import type { Test } from 'tap'
import type { InterceptionPki } from './interception-pki'
import type { MemoryGrowth } from './memory-probed-proxy'

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

/** How far into the 100 MiB body the reading side stops reading (the stall). */
export const READ_BEFORE_STALL = 16 * 1024 * 1024
// Measured 10 to 19 MiB ahead, nearly all of it in the kernel's socket buffers, which Linux
// autotunes per connection (up to net.ipv4.tcp_rmem's maximum, 32 MiB where this was measured); the
// bound leaves room for that and is still far below the ~84 MiB a buffering proxy would allow.
const MAX_IN_FLIGHT = 56 * 1024 * 1024
// What the proxy may hold, after full GCs, while the reader is stalled and once the transfer is
// over: a proxy that kept the body (or every chunk it passed on) would hold tens of MiB while
// stalled and the whole 100 MiB afterwards. The peak RSS is reported, not bounded: it counts
// garbage that V8 collects when it chooses (it lets dead Buffers pile up to its external-memory
// trigger before collecting), measured 26 to 92.5 MiB over the same transfer, so it can tell
// a streaming proxy from a buffering one only on a quiet machine.
const MAX_PROXY_BUFFERS = 16 * 1024 * 1024
const MAX_PROXY_HEAP = 16 * 1024 * 1024

/** What a 100 MiB transfer through the memory-probed proxy measured, with the reading side stalled midway. */
export interface StalledTransfer {
  /** Who sends the body and who reads it: `origin`/`client` for a download, `client`/`origin` for an upload. */
  sender: string
  reader: string
  /** Bytes the reader had read when it stalled, and the bytes the sender had made by the time nothing moved. */
  read: number
  produced: number
  /** The proxy's growth while stalled, and over the whole transfer. */
  whileStalled: MemoryGrowth
  afterwards: MemoryGrowth
  seconds: number
}

/**
 * Checks that the stalled reader held the sender back a bounded distance and that the proxy held
 * no body: bounded Buffers while stalled, and bounded Buffers and heap once the transfer is over.
 */
export function expectHeldBack (t: Test, transfer: StalledTransfer): void {
  const { sender, reader, read, produced, whileStalled, afterwards, seconds } = transfer
  const ahead = produced - read
  t.comment(`${reader} stalled after ${mib(read)}; ${sender} had produced ${mib(produced)}, ${mib(ahead)} ahead; ` +
    `proxy growth while stalled: Buffers ${mib(whileStalled.arrayBuffers)}, heap ${mib(whileStalled.heapUsed)}; ` +
    `peak RSS growth over the transfer ${mib(afterwards.maxRss)} (baseline peak ${mib(afterwards.baselineMaxRss)}); ${seconds.toFixed(2)} s`)
  t.ok(ahead < MAX_IN_FLIGHT, `the ${sender} was held back: ${mib(ahead)} ahead of the ${reader} (bound ${mib(MAX_IN_FLIGHT)})`)
  t.ok(whileStalled.arrayBuffers < MAX_PROXY_BUFFERS, `the stalled proxy holds ${mib(whileStalled.arrayBuffers)} more Buffers than before (bound ${mib(MAX_PROXY_BUFFERS)})`)
  t.ok(afterwards.arrayBuffers < MAX_PROXY_BUFFERS, `after the transfer the proxy holds ${mib(afterwards.arrayBuffers)} more Buffers than before (bound ${mib(MAX_PROXY_BUFFERS)})`)
  t.ok(afterwards.heapUsed < MAX_PROXY_HEAP, `after the transfer the proxy holds ${mib(afterwards.heapUsed)} more heap than before (bound ${mib(MAX_PROXY_HEAP)})`)
}
