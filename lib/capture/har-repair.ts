// Mends a capture file a killed process left cut: what `forward-proxy har-repair FILE` runs.

import { randomBytes } from 'node:crypto'
import { constants, lstat, open, rename, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { CaptureFileNotRegularError, NotACaptureError } from './capture-file-errors'
import { ENTRY_SEPARATOR, HAR_TAIL, harHead, type HarCreator } from './har-format'

/** What {@link repairHarFile} found and did. */
export interface HarRepairResult {
  /** Entries the file holds now. */
  readonly entries: number
  /** Bytes dropped that were neither a whole entry nor part of the document's frame: an entry cut short. */
  readonly droppedBytes: number
  /** False when the file was a valid HAR document already, and left as it was. */
  readonly changed: boolean
}

const LINE_FEED = 0x0a

/**
 * Makes the capture file at `path` a valid HAR document again. A file that parses as HAR (a
 * `log.entries` array) is left as it is. Otherwise it must start with the head the capture writes;
 * its head and every whole entry line are kept (an entry is one line, a JSON object once the comma
 * that ends it is taken off), the rest dropped: an entry cut short, a missing tail. The result is
 * written to a new private file (0600) in the same folder, then renamed over the original, so a
 * failure halfway leaves the original untouched.
 * @throws NotACaptureError (`FFP_ERR_NOT_A_CAPTURE`) when the file is not a capture; it is not modified.
 * @throws CaptureFileNotRegularError (`FFP_ERR_CAPTURE_NOT_A_FILE`) for a symbolic link, a directory or another special file.
 * @throws the file system's error (`ENOENT`, `EACCES`...) when the file cannot be read or replaced.
 */
export async function repairHarFile (path: string): Promise<HarRepairResult> {
  const content = await readRegularFile(path)
  const whole = entryCountOfHar(content.toString('utf8'))
  if (whole !== undefined) return { entries: whole, droppedBytes: 0, changed: false }
  const lines = splitLines(content)
  const creator = captureCreator(lines[0]?.toString('utf8') ?? '')
  if (creator === undefined) throw new NotACaptureError(path)
  const kept: string[] = []
  let droppedBytes = 0
  for (const line of lines.slice(1)) {
    const text = line.toString('utf8')
    const entry = text.endsWith(',') ? text.slice(0, -1) : text
    if (isJsonObject(entry)) kept.push(entry)
    else if (!']}}'.startsWith(text)) droppedBytes += line.length
  }
  await replaceFile(path, `${harHead(creator)}\n${kept.join(ENTRY_SEPARATOR)}${HAR_TAIL}`)
  return { entries: kept.length, droppedBytes, changed: true }
}

async function readRegularFile (path: string): Promise<Buffer> {
  // A symbolic link would be replaced by the repaired file, not mended: refused, as the writer refuses it.
  if (!(await lstat(path)).isFile()) throw new CaptureFileNotRegularError(path)
  const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW)
  try {
    return await file.readFile()
  } finally {
    await file.close()
  }
}

/** `log.entries.length` when `text` is a HAR document, else undefined. */
function entryCountOfHar (text: string): number | undefined {
  let document: unknown
  try {
    document = JSON.parse(text)
  } catch {
    return undefined
  }
  const log = isRecord(document) ? document.log : undefined
  return isRecord(log) && Array.isArray(log.entries) ? log.entries.length : undefined
}

/** The creator named by `line` when it is exactly the head the capture writes. */
function captureCreator (line: string): HarCreator | undefined {
  let document: unknown
  try {
    document = JSON.parse(`${line}]}}`)
  } catch {
    return undefined
  }
  const creator = isRecord(document) && isRecord(document.log) ? document.log.creator : undefined
  if (!isRecord(creator) || typeof creator.name !== 'string' || typeof creator.version !== 'string') return undefined
  const found = { name: creator.name, version: creator.version }
  return harHead(found) === line ? found : undefined
}

function isJsonObject (text: string): boolean {
  try {
    const value: unknown = JSON.parse(text)
    return isRecord(value)
  } catch {
    return false
  }
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The lines of `content` as bytes, so what is dropped is counted as it was on the disk. */
function splitLines (content: Buffer): Buffer[] {
  const lines: Buffer[] = []
  let start = 0
  for (let end = content.indexOf(LINE_FEED); end !== -1; end = content.indexOf(LINE_FEED, start)) {
    lines.push(content.subarray(start, end))
    start = end + 1
  }
  lines.push(content.subarray(start))
  return lines
}

async function replaceFile (path: string, text: string): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.repair`)
  const file = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600)
  try {
    try {
      await file.writeFile(text)
      await file.sync()
    } finally {
      await file.close()
    }
    await rename(temporary, path)
  } catch (error) {
    await unlink(temporary).catch(() => {})
    throw error
  }
}
