// The HAR capture file: entries queued by requests, written by one loop off the request path, in
// a file that is a whole HAR document between any two writes.

import { constants, lstat, open, rename, unlink, type FileHandle } from 'node:fs/promises'
import { CaptureFileNotRegularError, NotACaptureError } from './capture-file-errors'
import { ENTRY_SEPARATOR, HAR_TAIL, emptyHar, type HarCreator } from './har-format'

/** Where and how a {@link HarFileWriter} writes. */
export interface HarFileOptions {
  /** Absolute path of the `.har` file. */
  readonly path: string
  /** A batch that would take the file past this size goes to a new file, the old one rotated away. */
  readonly maxFileBytes: number
  /** Rotated files kept (`name.1.har` the newest); 0: a full file is deleted when the next one starts. */
  readonly keepFiles: number
  /** HAR's `log.creator`. */
  readonly creator: HarCreator
  /** Bytes of entries waiting for the disk past which new entries are dropped. Default 16 MiB. */
  readonly maxQueuedBytes?: number
}

const DEFAULT_MAX_QUEUED_BYTES = 16 * 1024 * 1024
/** One write takes at most this much (an entry larger than it is written alone). */
const MAX_BATCH_BYTES = 1024 * 1024
const TAIL = Buffer.from(HAR_TAIL)
const SEPARATOR = Buffer.from(ENTRY_SEPARATOR)
// O_EXCL: a file, or a symbolic link, put at the path since we looked is refused, never followed
// or truncated.
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL
const PRIVATE_MODE = 0o600

interface Waiter {
  /** Resolved once this many accepted entries are settled. */
  readonly target: number
  readonly resolve: () => void
}

/**
 * Writes HAR entries to a file, keeping it a valid HAR 1.2 document at every moment between two
 * writes, so that a reader (or a crash) never finds a broken one:
 *
 * - {@link append} only queues; one asynchronous loop writes what is queued in batches, one write
 *   in flight at most, so a request never waits for the disk.
 * - The file is created (mode 0600, refusing anything already at the path) holding no entry, and a
 *   batch is one positional write over the tail: the entries, then the tail again. Each entry is
 *   one line, so what a killed process leaves half-written is mended by `repairHarFile`.
 * - A file already at the path is rotated away, never written over; so is a full one, before the
 *   batch that would take it past `maxFileBytes`.
 * - Any failure (full disk, missing or unwritable folder, a symbolic link at the path) stops the
 *   writer: `onStop` is called once, what is queued is dropped, and every later entry too. The
 *   file keeps its tail when it can. Requests never see the failure.
 */
export class HarFileWriter {
  readonly #options: HarFileOptions
  readonly #onStop: (error: Error) => void
  readonly #empty: Buffer
  readonly #maxQueuedBytes: number
  /** Entries waiting for the disk, as UTF-8 bytes encoded once when they were appended. */
  #queue: Buffer[] = []
  #queuedBytes = 0
  #accepted = 0
  /** Accepted entries written or dropped since. */
  #settled = 0
  #written = 0
  #dropped = 0
  #created = false
  #closing = false
  #stopped = false
  #finished = false
  #wake: (() => void) | undefined
  #waiters: Waiter[] = []
  #file: FileHandle | undefined
  #size = 0
  #entriesInFile = 0
  readonly #done: Promise<void>

  /**
   * Starts writing at once: the file is created holding no entry (a file already there is rotated
   * away first, kept as `name.1.har` even with `keepFiles` 0, since this writer did not write it).
   * `onStop` gets the error that stopped the writer, once; it must not throw.
   */
  constructor (options: HarFileOptions, onStop: (error: Error) => void) {
    this.#options = options
    this.#onStop = onStop
    this.#empty = Buffer.from(emptyHar(options.creator))
    this.#maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES
    this.#done = this.#run()
  }

  /** True once a failure stopped the writer (`onStop` was called). */
  get stopped (): boolean {
    return this.#stopped
  }

  /** Entries dropped: the queue was full, the entry was not one JSON object on one line, or the writer had stopped or was closing. */
  get dropped (): number {
    return this.#dropped
  }

  /** Entries written to the disk. */
  get written (): number {
    return this.#written
  }

  /**
   * Queues `entry`, one JSON object on one line (what `JSON.stringify` makes of an object), and
   * returns at once: true when queued, false when dropped. Never throws.
   */
  append (entry: string): boolean {
    if (this.#stopped || this.#closing) {
      this.#dropped++
      return false
    }
    const data = Buffer.from(entry)
    if (this.#queuedBytes + data.length > this.#maxQueuedBytes || !isOneLineObject(data)) {
      this.#dropped++
      return false
    }
    this.#queue.push(data)
    this.#queuedBytes += data.length
    this.#accepted++
    this.#wakeLoop()
    return true
  }

  /** Resolves once the file exists and every entry appended so far is written, or the writer stopped. Never rejects. */
  flushed (): Promise<void> {
    const target = this.#accepted
    if (this.#isFlushed(target)) return Promise.resolve()
    return new Promise((resolve) => this.#waiters.push({ target, resolve }))
  }

  /** Writes what is queued and closes the file, a valid HAR document; later entries are dropped. Never rejects. */
  close (): Promise<void> {
    this.#closing = true
    this.#wakeLoop()
    return this.#done
  }

  async #run (): Promise<void> {
    try {
      await this.#moveAside()
      let file = await this.#create()
      this.#created = true
      this.#notify()
      while (true) {
        if (this.#queue.length === 0) {
          if (this.#closing) break
          await new Promise<void>((resolve) => { this.#wake = resolve })
          continue
        }
        const count = this.#nextBatchLength()
        if (count === 0) file = await this.#rotate(file)
        else await this.#writeBatch(file, count)
      }
      await this.#closeFile()
    } catch (error) {
      this.#stop(error instanceof Error ? error : new Error(String(error)))
      await this.#closeFile().catch(() => {})
    }
    this.#finished = true
    this.#notify()
  }

  /**
   * A capture already at the path is rotated away; anything but a regular file is refused, and so
   * is a file that is not a capture (a path that names the configuration or a key by mistake must
   * not move it).
   */
  async #moveAside (): Promise<void> {
    const { path, keepFiles } = this.#options
    const found = await lstat(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined
      throw error
    })
    if (found === undefined) return
    if (!found.isFile()) throw new CaptureFileNotRegularError(path)
    if (found.size > 0 && !(await startsLikeCapture(path))) throw new NotACaptureError(path)
    await rotateAway(path, Math.max(1, keepFiles))
  }

  async #create (): Promise<FileHandle> {
    const { path } = this.#options
    const file = await open(path, CREATE_FLAGS, PRIVATE_MODE)
    try {
      await writeAll(file, this.#empty, 0)
    } catch (error) {
      // A file without its head and tail holds nothing: better none than an invalid one.
      await file.close().catch(() => {})
      await unlink(path).catch(() => {})
      throw error
    }
    this.#file = file
    this.#size = this.#empty.length
    this.#entriesInFile = 0
    return file
  }

  async #rotate (file: FileHandle): Promise<FileHandle> {
    this.#file = undefined
    await file.close()
    const { path, keepFiles } = this.#options
    if (keepFiles > 0) await rotateAway(path, keepFiles)
    else await unlink(path)
    return await this.#create()
  }

  /**
   * How many queued entries the next write takes: those that keep the file within
   * `maxFileBytes` and the write within {@link MAX_BATCH_BYTES}; 0 when the first does not fit in
   * a file that holds entries already (it must be rotated). An empty file takes its first entry
   * whatever its size.
   */
  #nextBatchLength (): number {
    const maxFileBytes = this.#options.maxFileBytes
    let size = this.#size
    let inFile = this.#entriesInFile
    let batchBytes = 0
    let count = 0
    for (const entry of this.#queue) {
      const added = (inFile > 0 ? SEPARATOR.length : 0) + entry.length
      if (inFile > 0 && size + added > maxFileBytes) break
      if (count > 0 && batchBytes + added > MAX_BATCH_BYTES) break
      size += added
      batchBytes += added
      inFile++
      count++
    }
    return count
  }

  /** One positional write over the tail: the first `count` queued entries, then the tail. */
  async #writeBatch (file: FileHandle, count: number): Promise<void> {
    const batch = this.#queue.slice(0, count)
    const parts: Buffer[] = this.#entriesInFile > 0 ? [SEPARATOR] : []
    for (const [index, entry] of batch.entries()) {
      if (index > 0) parts.push(SEPARATOR)
      parts.push(entry)
    }
    parts.push(TAIL)
    const data = Buffer.concat(parts)
    const previousSize = this.#size
    try {
      await writeAll(file, data, previousSize - TAIL.length)
    } catch (error) {
      // Part of the batch may be in place of the tail: cut it off and put the tail back, so the
      // file holds the entries before it, whole.
      await file.truncate(previousSize).then(() => writeAll(file, TAIL, previousSize - TAIL.length)).catch(() => {})
      throw error
    }
    this.#queue.splice(0, count)
    this.#size = previousSize - TAIL.length + data.length
    this.#entriesInFile += count
    this.#written += count
    this.#settled += count
    for (const entry of batch) this.#queuedBytes -= entry.length
    this.#notify()
  }

  async #closeFile (): Promise<void> {
    const file = this.#file
    this.#file = undefined
    if (file !== undefined) await file.close()
  }

  #stop (error: Error): void {
    this.#stopped = true
    this.#dropped += this.#queue.length
    this.#settled += this.#queue.length
    this.#queue = []
    this.#queuedBytes = 0
    this.#notify()
    try {
      this.#onStop(error)
    } catch (thrown) {
      // The caller's bug, reported as an uncaught exception rather than a rejection of the loop.
      process.nextTick(() => { throw thrown })
    }
  }

  #isFlushed (target: number): boolean {
    return this.#finished || this.#stopped || (this.#created && this.#settled >= target)
  }

  #notify (): void {
    if (this.#waiters.length === 0) return
    const waiting: Waiter[] = []
    for (const waiter of this.#waiters) {
      if (this.#isFlushed(waiter.target)) waiter.resolve()
      else waiting.push(waiter)
    }
    this.#waiters = waiting
  }

  #wakeLoop (): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }
}

/** The cheap check that keeps the file mendable line by line: `{...}` with no line feed. */
function isOneLineObject (entry: Buffer): boolean {
  return entry.length >= 2 && entry[0] === 0x7b && entry[entry.length - 1] === 0x7d && !entry.includes(0x0a)
}

/** Writes all of `data` at `position`, carrying on after short writes (as Node's own writeFile does). */
async function writeAll (file: FileHandle, data: Buffer, position: number): Promise<void> {
  let offset = 0
  while (offset < data.length) {
    const { bytesWritten } = await file.write(data, offset, data.length - offset, position + offset)
    offset += bytesWritten
  }
}

/** `traffic.har` → `traffic.1.har`; a path without the `.har` extension gets `.1` appended. */
function rotatedPath (path: string, index: number): string {
  return path.endsWith('.har') ? `${path.slice(0, -'.har'.length)}.${index}.har` : `${path}.${index}`
}

/** Renames `path` to its `.1`, the older ones one place up; the one at `.keep` is replaced. */
async function rotateAway (path: string, keep: number): Promise<void> {
  for (let index = keep - 1; index >= 1; index--) {
    await rename(rotatedPath(path, index), rotatedPath(path, index + 1)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error
    })
  }
  await rename(path, rotatedPath(path, 1))
}

// Every capture starts so, whoever its creator.
const CAPTURE_START = Buffer.from('{"log":{"version":"1.2","creator":')

/** True when the file at `path` begins as a capture file does. */
async function startsLikeCapture (path: string): Promise<boolean> {
  const file = await open(path, 'r')
  try {
    const start = Buffer.alloc(CAPTURE_START.length)
    const { bytesRead } = await file.read(start, 0, start.length, 0)
    return bytesRead === start.length && start.equals(CAPTURE_START)
  } finally {
    await file.close()
  }
}
