import { execFileSync } from 'node:child_process'
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rmdir, stat, symlink, writeFile, chmod } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type Test } from 'tap'
import { HarFileWriter, type HarFileOptions } from '../lib/capture/har-file'
import { CREATOR, harEntry, range, readHar, scratchFolder, sequenceOf } from './helpers/har-capture'

const HEAD = '{"log":{"version":"1.2","creator":{"name":"capture-test","version":"1.2.3"},"pages":[],"entries":['

/** A writer with roomy defaults, and the errors its onStop got. */
function startWriter (options: Partial<HarFileOptions> & { path: string }): { writer: HarFileWriter, stops: Error[] } {
  const stops: Error[] = []
  const writer = new HarFileWriter({ maxFileBytes: 1 << 30, keepFiles: 5, creator: CREATOR, ...options }, (error) => { stops.push(error) })
  return { writer, stops }
}

/** The text the writer must leave for these entries: the head line, one entry a line, the tail. */
function documentOf (entries: readonly string[]): string {
  return `${HEAD}\n${entries.join(',\n')}\n]}}\n`
}

/**
 * A tmpfs of `size` mounted on a fresh folder (unmounted when `t` ends), or undefined where this
 * process may not mount one.
 */
async function mountTmpfs (t: Test, options: string): Promise<string | undefined> {
  const folder = await mkdtemp(join(tmpdir(), 'ffp-har-mount-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', folder], { stdio: 'ignore' })
  } catch {
    await rmdir(folder)
    return undefined
  }
  t.teardown(async () => {
    execFileSync('umount', [folder], { stdio: 'ignore' })
    await rmdir(folder)
  })
  return folder
}

test('the file is a valid HAR with no entry once the writer starts, private (0600), and valid after each flushed batch', async (t) => {
  const path = join(await scratchFolder(t), 'traffic.har')
  const { writer, stops } = startWriter({ path })
  await writer.flushed()
  t.equal(await readFile(path, 'utf8'), `${HEAD}\n\n]}}\n`, 'the empty document: head, line feed, tail')
  const empty = await readHar(path)
  t.strictSame(empty.log.creator, CREATOR)
  t.equal(empty.log.version, '1.2')
  t.strictSame(empty.log.entries, [])
  t.equal((await stat(path)).mode & 0o777, 0o600, 'created private')

  const written: string[] = []
  for (const [from, count] of [[0, 1], [1, 3], [4, 200], [204, 1]] as const) {
    for (const seq of range(from, count)) {
      const entry = harEntry(seq, seq % 7)
      t.equal(writer.append(entry), true)
      written.push(entry)
    }
    await writer.flushed()
    t.strictSame(await sequenceOf(path), range(0, from + count), `after ${from + count} entries, every one is there in order`)
    t.equal(await readFile(path, 'utf8'), documentOf(written), 'each entry on a line of its own')
    t.equal(writer.written, from + count)
  }
  await writer.close()
  t.equal(await readFile(path, 'utf8'), documentOf(written), 'close leaves it as it was')
  t.equal((await stat(path)).mode & 0o777, 0o600)
  t.strictSame(stops, [])
  t.equal(writer.dropped, 0)
})

test('close() writes what is queued and leaves a valid HAR; later entries are dropped', async (t) => {
  const path = join(await scratchFolder(t), 'traffic.har')
  const { writer, stops } = startWriter({ path })
  for (const seq of range(0, 100)) writer.append(harEntry(seq, 10))
  const closed = writer.close()
  t.equal(writer.append(harEntry(100)), false, 'refused once closing')
  await closed
  t.strictSame(await sequenceOf(path), range(0, 100))
  t.equal(writer.written, 100)
  t.equal(writer.dropped, 1)
  t.equal(writer.append(harEntry(101)), false, 'and once closed')
  await writer.close()
  await writer.flushed()
  t.strictSame(await sequenceOf(path), range(0, 100), 'a second close changes nothing')
  t.equal(writer.stopped, false)
  t.strictSame(stops, [])
})

test('an existing capture at the path is rotated away, never written over, even with keepFiles 0; an empty file too', async (t) => {
  const folder = await scratchFolder(t)
  const previous = documentOf([harEntry(7)])
  for (const keepFiles of [2, 0]) {
    const path = join(folder, `kept-${keepFiles}.har`)
    await writeFile(path, previous)
    const { writer, stops } = startWriter({ path, keepFiles })
    writer.append(harEntry(0))
    await writer.close()
    t.equal(await readFile(join(folder, `kept-${keepFiles}.1.har`), 'utf8'), previous, `keepFiles ${keepFiles}: the old file is kept as .1`)
    t.strictSame(await sequenceOf(path), [0], 'the new file holds the new entry alone')
    t.strictSame(stops, [])
  }
  // What a writer killed between creating its file and writing its head leaves.
  const empty = join(folder, 'empty.har')
  await writeFile(empty, '')
  const { writer, stops } = startWriter({ path: empty })
  await writer.close()
  t.strictSame(stops, [])
  t.equal(await readFile(join(folder, 'empty.1.har'), 'utf8'), '')
})

test('a file at the path that is not a capture (the configuration, a key named by mistake) is neither written over nor moved: onStop once', async (t) => {
  const folder = await scratchFolder(t)
  const path = join(folder, 'proxy.json')
  await writeFile(path, '{"listen":[]}\n')
  const { writer, stops } = startWriter({ path })
  await writer.close()
  t.equal(stops.length, 1)
  t.equal((stops[0] as Error & { code?: string }).code, 'FFP_ERR_NOT_A_CAPTURE')
  t.equal(await readFile(path, 'utf8'), '{"listen":[]}\n', 'untouched')
  t.strictSame(await readdir(folder), ['proxy.json'], 'nothing rotated, nothing created')
})

test('rotation: a full file is rotated before the batch that would take it past maxFileBytes; keepFiles files are kept, each a valid HAR, no entry lost', async (t) => {
  const folder = await scratchFolder(t)
  const path = join(folder, 'traffic.har')
  const maxFileBytes = 4000
  const { writer, stops } = startWriter({ path, maxFileBytes, keepFiles: 2 })
  // Entries of varied sizes (two bytes a padding character), some appended together, some alone.
  const entries = range(0, 40).map((seq) => harEntry(seq, 100 + (seq * 37) % 300))
  for (const [i, entry] of entries.entries()) {
    writer.append(entry)
    if (i % 3 === 0) await writer.flushed()
  }
  await writer.close()
  t.strictSame((await readdir(folder)).sort(), ['traffic.1.har', 'traffic.2.har', 'traffic.har'], 'the current file and keepFiles rotated ones, nothing more')
  const files = ['traffic.2.har', 'traffic.1.har', 'traffic.har']
  const sequences: number[][] = []
  for (const name of files) {
    const file = join(folder, name)
    const seqs = await sequenceOf(file)
    const size = (await stat(file)).size
    t.ok(seqs.length > 0, `${name} holds entries`)
    t.ok(size <= maxFileBytes, `${name} is within maxFileBytes (${size})`)
    t.equal((await stat(file)).mode & 0o777, 0o600, `${name} is private`)
    sequences.push(seqs)
  }
  const all = sequences.flat()
  t.strictSame(all, range(all[0] ?? -1, all.length), 'the files hold consecutive entries, in order')
  t.equal(all.at(-1), 39, 'up to the last one')
  for (const seqs of sequences.slice(0, 2)) {
    const file = documentOf(seqs.map((seq) => entries[seq] ?? ''))
    const next = entries[(seqs.at(-1) ?? 0) + 1] ?? ''
    t.ok(Buffer.byteLength(file) + 2 + Buffer.byteLength(next) > maxFileBytes, 'a file was rotated only when the next entry did not fit')
  }
  t.strictSame(stops, [])
})

test('rotation: every entry is in some file when keepFiles holds them all; an entry larger than maxFileBytes is written alone', async (t) => {
  const folder = await scratchFolder(t)
  const path = join(folder, 'capture.log')
  const { writer, stops } = startWriter({ path, maxFileBytes: 3000, keepFiles: 50 })
  writer.append(harEntry(0, 10))
  writer.append(harEntry(1, 4000))
  writer.append(harEntry(2, 10))
  writer.append(harEntry(3, 10))
  await writer.flushed()
  writer.append(harEntry(4, 4000))
  await writer.close()
  t.strictSame((await readdir(folder)).sort(), ['capture.log', 'capture.log.1', 'capture.log.2', 'capture.log.3'], 'a name without .har gets .N appended')
  t.strictSame(await sequenceOf(join(folder, 'capture.log.3')), [0])
  t.strictSame(await sequenceOf(join(folder, 'capture.log.2')), [1], 'the large entry alone in its file')
  t.strictSame(await sequenceOf(join(folder, 'capture.log.1')), [2, 3])
  t.strictSame(await sequenceOf(path), [4], 'and the next large one alone too')
  t.strictSame(stops, [])
})

test('rotation with keepFiles 0: a full file is deleted when the next one starts', async (t) => {
  const folder = await scratchFolder(t)
  const path = join(folder, 'traffic.har')
  const { writer, stops } = startWriter({ path, maxFileBytes: 1500, keepFiles: 0 })
  for (const seq of range(0, 5)) {
    writer.append(harEntry(seq, 300))
    await writer.flushed()
    t.strictSame(await readdir(folder), ['traffic.har'], `after entry ${seq}: the current file alone`)
    t.strictSame(await sequenceOf(path), [seq], 'holding the newest entry')
  }
  await writer.close()
  t.strictSame(stops, [])
})

test('a symbolic link or a directory at the path is refused: onStop once, nothing followed or moved', async (t) => {
  const folder = await scratchFolder(t)
  const target = join(folder, 'target.txt')
  await writeFile(target, 'the target\n')
  const link = join(folder, 'traffic.har')
  await symlink(target, link)
  const { writer, stops } = startWriter({ path: link })
  await writer.flushed()
  t.equal(stops.length, 1, 'onStop called')
  t.equal((stops[0] as Error & { code?: string }).code, 'FFP_ERR_CAPTURE_NOT_A_FILE')
  t.equal(writer.stopped, true)
  t.equal(writer.append(harEntry(0)), false, 'later entries are dropped')
  await writer.close()
  t.equal(stops.length, 1, 'once')
  t.equal(await readFile(target, 'utf8'), 'the target\n', 'the target is untouched')
  t.equal(await readlink(link), target, 'the link is where it was')
  t.strictSame((await readdir(folder)).sort(), ['target.txt', 'traffic.har'], 'nothing rotated, nothing created')

  const directory = join(folder, 'directory.har')
  await mkdir(directory)
  const second = startWriter({ path: directory })
  await second.writer.close()
  t.equal(second.stops.length, 1)
  t.equal((second.stops[0] as Error & { code?: string }).code, 'FFP_ERR_CAPTURE_NOT_A_FILE')
  t.ok((await lstat(directory)).isDirectory(), 'the directory stays')
})

test('two writers started together on one path: a file raced in at the path is refused (O_EXCL), never written by both', async (t) => {
  const folder = await scratchFolder(t)
  let refused = 0
  // Each round, both look at the path before either creates it, or one finds the other's file and
  // rotates it away: either way no file may hold entries of both, nor lose one that was written.
  for (let round = 0; round < 20; round++) {
    const path = join(folder, `race-${round}.har`)
    const writers = [startWriter({ path }), startWriter({ path })]
    for (const [w, { writer }] of writers.entries()) {
      for (const seq of range(w * 1000, 50)) writer.append(harEntry(seq, 20))
    }
    await Promise.all(writers.map(({ writer }) => writer.close()))
    const files = (await readdir(folder)).filter((name) => name.startsWith(`race-${round}.`))
    const seqs = (await Promise.all(files.map((name) => sequenceOf(join(folder, name))))).filter((list) => list.length > 0)
    for (const [w, { writer, stops }] of writers.entries()) {
      if (writer.stopped) {
        refused++
        t.equal((stops[0] as Error & { code?: string }).code, 'EEXIST', 'the writer that lost the race stops')
        t.equal(writer.written, 0)
      } else {
        t.ok(seqs.some((list) => JSON.stringify(list) === JSON.stringify(range(w * 1000, 50))), `round ${round}: writer ${w}'s entries, alone in a file`)
      }
    }
    t.equal(seqs.length, writers.filter(({ writer }) => !writer.stopped).length, 'one file per writer that wrote')
  }
  t.comment(`${refused} of 20 races ended with a writer refused at creation`)
})

test('a missing or unwritable folder: onStop once, appends return false, nothing thrown', async (t) => {
  const folder = await scratchFolder(t)
  await writeFile(join(folder, 'a-file'), '')
  const paths = [join(folder, 'missing', 'traffic.har'), join(folder, 'a-file', 'traffic.har')]
  if (process.getuid?.() !== 0) {
    const readOnly = join(folder, 'read-only')
    await mkdir(readOnly)
    await chmod(readOnly, 0o555)
    paths.push(join(readOnly, 'traffic.har'))
  } else {
    // Permissions do not stop root: a read-only file system does.
    const readOnly = await mountTmpfs(t, 'ro,size=64k')
    if (readOnly === undefined) t.comment('no read-only folder: root may not mount a tmpfs here')
    else paths.push(join(readOnly, 'traffic.har'))
  }
  for (const path of paths) {
    const { writer, stops } = startWriter({ path })
    t.equal(writer.append(harEntry(0)), true, 'queued while the file is being created')
    await writer.flushed()
    t.equal(stops.length, 1, `${path}: onStop called (${stops[0]?.message ?? ''})`)
    t.equal(writer.stopped, true)
    t.equal(writer.append(harEntry(1)), false)
    t.equal(writer.dropped, 2, 'the queued entry and the later one')
    t.equal(writer.written, 0)
    await writer.close()
    t.equal(stops.length, 1, 'once')
  }
})

test('the queue: entries past maxQueuedBytes are dropped and counted, as are entries that are not one JSON object on one line', async (t) => {
  const path = join(await scratchFolder(t), 'traffic.har')
  const entries = range(0, 30).map((seq) => harEntry(seq, 300))
  const maxQueuedBytes = 10_000
  const { writer, stops } = startWriter({ path, maxQueuedBytes })
  // Appended in one go: the writer is still creating its file, so nothing leaves the queue.
  const accepted = entries.map((entry) => writer.append(entry))
  let fits = 0
  for (let bytes = 0; fits < entries.length && bytes + Buffer.byteLength(entries[fits] ?? '') <= maxQueuedBytes; fits++) bytes += Buffer.byteLength(entries[fits] ?? '')
  t.ok(fits > 1 && fits < entries.length, `${fits} entries fit`)
  t.strictSame(accepted, entries.map((_, i) => i < fits), 'the first that fit are queued, the rest dropped')
  t.equal(writer.dropped, entries.length - fits)
  t.equal(writer.append('{"_seq": 1,\n"a": 2}'), false, 'an entry on two lines')
  t.equal(writer.append(''), false, 'an empty entry')
  t.equal(writer.append('[1]'), false, 'not an object')
  t.equal(writer.dropped, entries.length - fits + 3)
  await writer.flushed()
  t.strictSame(await sequenceOf(path), range(0, fits))
  t.equal(writer.append(harEntry(100)), true, 'room again once written')
  await writer.close()
  t.strictSame(await sequenceOf(path), [...range(0, fits), 100])
  t.strictSame(stops, [])
})

test('a full disk (ENOSPC) stops the writer: onStop once, the file keeps every entry written and its tail', async (t) => {
  const folder = await mountTmpfs(t, 'size=64k')
  if (folder === undefined) {
    t.plan(0, 'skipped: a tmpfs cannot be mounted here, so there is no full disk to write to')
    return
  }
  const path = join(folder, 'traffic.har')
  const { writer, stops } = startWriter({ path })
  await writer.flushed()
  // Each entry spans pages, so the write that meets the full disk is a short one first.
  let seq = 0
  while (!writer.stopped && seq < 100) {
    writer.append(harEntry(seq++, 5000))
    await writer.flushed()
  }
  t.equal(stops.length, 1, 'onStop called')
  t.equal((stops[0] as Error & { code?: string }).code, 'ENOSPC')
  t.ok(writer.written > 0 && writer.written < seq, `${writer.written} entries written before the disk was full`)
  t.strictSame(await sequenceOf(path), range(0, writer.written), 'the file is valid and holds every entry written')
  t.equal(writer.append(harEntry(seq)), false)
  await writer.close()
  t.equal(stops.length, 1, 'once')
})
