import { spawn } from 'node:child_process'
import { readdir, readFile, stat, symlink, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'tap'
import { HarFileWriter } from '../lib/capture/har-file'
import { repairHarFile } from '../lib/capture/har-repair'
import { runBin } from './helpers/cli-bin'
import { childEnv, TS_LOADER } from './helpers/child-node'
import { CREATOR, harEntry, range, readHar, scratchFolder, sequenceOf } from './helpers/har-capture'

/** A capture file written by the writer, holding `count` entries, closed. */
async function captureOf (path: string, count: number, padding = 50): Promise<void> {
  const writer = new HarFileWriter({ path, maxFileBytes: 1 << 30, keepFiles: 1, creator: CREATOR }, (error) => { throw error })
  for (const seq of range(0, count)) writer.append(harEntry(seq, padding))
  await writer.close()
}

/** The lines after the head that are whole entries (a JSON object once the comma ending it is cut). */
function wholeEntryLines (text: string): number {
  return text.split('\n').slice(1).filter((line) => {
    try {
      const value: unknown = JSON.parse(line.endsWith(',') ? line.slice(0, -1) : line)
      return typeof value === 'object' && value !== null && !Array.isArray(value)
    } catch {
      return false
    }
  }).length
}

test('a valid capture is left as it is, and so is any valid HAR document', async (t) => {
  const folder = await scratchFolder(t)
  const path = join(folder, 'traffic.har')
  await captureOf(path, 5)
  const before = await readFile(path)
  const { mtimeMs, ino } = await stat(path)
  t.strictSame(await repairHarFile(path), { entries: 5, droppedBytes: 0, changed: false })
  t.same(await readFile(path), before, 'the same bytes')
  t.strictSame([(await stat(path)).mtimeMs, (await stat(path)).ino], [mtimeMs, ino], 'the same file, not rewritten')

  const pretty = join(folder, 'browser.har')
  const document = JSON.stringify({ log: { version: '1.2', creator: { name: 'a browser', version: '1' }, entries: [JSON.parse(harEntry(0))] } }, null, 2)
  await writeFile(pretty, document)
  t.strictSame(await repairHarFile(pretty), { entries: 1, droppedBytes: 0, changed: false })
  t.equal(await readFile(pretty, 'utf8'), document)
})

test('forward-proxy har-repair: a file cut in the middle of an entry keeps every whole entry, and is valid after', async (t) => {
  const folder = await scratchFolder(t)
  const path = join(folder, 'traffic.har')
  await captureOf(path, 5)
  const text = await readFile(path, 'utf8')
  const lines = text.split('\n')
  // The head, three whole entries with their commas, then half of the fourth.
  const fourth = lines[4] ?? ''
  const cut = Buffer.byteLength(lines.slice(0, 4).join('\n')) + 1 + Math.floor(fourth.length / 2)
  await truncate(path, cut)
  const partial = Math.floor(fourth.length / 2)

  const bin = runBin(t, ['har-repair', path])
  t.equal(await bin.exited, 0)
  t.equal(bin.stdout(), `${path}: repaired, 3 entries kept, ${partial} bytes of an unfinished entry dropped\n`)
  t.equal(bin.stderr(), '')
  t.strictSame(await sequenceOf(path), [0, 1, 2], 'a valid HAR with the whole entries')
  t.strictSame((await readHar(path)).log.creator, CREATOR)
  t.equal(await readFile(path, 'utf8'), `${lines[0] ?? ''}\n${lines.slice(1, 4).join('\n').slice(0, -1)}\n]}}\n`, 'as the writer would have written them')
  t.equal((await stat(path)).mode & 0o777, 0o600, 'private')
  t.strictSame(await readdir(folder), ['traffic.har'], 'no temporary file left')

  const again = runBin(t, ['har-repair', path])
  t.equal(await again.exited, 0)
  t.equal(again.stdout(), `${path}: valid, 3 entries\n`, 'a second run finds it valid')
})

test('repairHarFile: a missing tail, a tail cut short, a cut right after a comma, a file with the head alone', async (t) => {
  const folder = await scratchFolder(t)
  const path = join(folder, 'traffic.har')
  await captureOf(path, 3)
  const whole = await readFile(path, 'utf8')
  const head = whole.slice(0, whole.indexOf('\n'))
  const cuts: Array<[string, number, number]> = [
    ['the tail cut short', whole.length - 2, 3],
    ['no tail at all', whole.length - '\n]}}\n'.length, 3],
    ['cut right after a comma', whole.lastIndexOf(',\n') + 1, 2],
    ['cut right after a line feed', whole.lastIndexOf(',\n') + 2, 2],
    ['the head line alone', head.length + 1, 0]
  ]
  for (const [name, length, entries] of cuts) {
    await writeFile(path, whole.slice(0, length))
    t.strictSame(await repairHarFile(path), { entries, droppedBytes: 0, changed: true }, name)
    t.strictSame(await sequenceOf(path), range(0, entries), `${name}: valid`)
  }
  t.strictSame(await readdir(folder), ['traffic.har'])
})

test('a file that is not a capture is refused with FFP_ERR_NOT_A_CAPTURE and left unchanged; the bin says so on stderr and exits 1', async (t) => {
  const folder = await scratchFolder(t)
  const contents = [
    'hello\n',
    '',
    '{"a":1}\n',
    '{"log":{"version":"1.2","creator":{"name":"x","version":"1"},"entries":[\n{"a":1}\n',
    `${JSON.stringify({ log: { version: '1.2', creator: CREATOR, pages: [], entries: [] } }, null, 2).slice(0, 60)}\n{"a":1}\n`
  ]
  for (const [i, content] of contents.entries()) {
    const path = join(folder, `not-${i}.har`)
    await writeFile(path, content)
    await t.rejects(repairHarFile(path), { code: 'FFP_ERR_NOT_A_CAPTURE' }, JSON.stringify(content.slice(0, 30)))
    t.equal(await readFile(path, 'utf8'), content, 'unchanged')
  }
  const path = join(folder, 'not-0.har')
  const bin = runBin(t, ['har-repair', path])
  t.equal(await bin.exited, 1)
  t.equal(bin.stdout(), '')
  t.equal(bin.stderr(), `forward-proxy: ${path} is not a HAR capture written by fastify-forward-proxy: left unchanged\n`, 'one line, no stack')
  t.equal(await readFile(path, 'utf8'), 'hello\n')
  t.strictSame((await readdir(folder)).length, contents.length, 'no temporary file left')
})

test('har-repair: a missing file, a symbolic link, or no file named: one line on stderr, exit 1', async (t) => {
  const folder = await scratchFolder(t)
  const missing = join(folder, 'missing.har')
  const bin = runBin(t, ['har-repair', missing])
  t.equal(await bin.exited, 1)
  t.match(bin.stderr(), /^forward-proxy: ENOENT: no such file or directory, lstat '.*missing\.har'\n$/)
  t.equal(bin.stdout(), '')

  const target = join(folder, 'target.har')
  await captureOf(target, 1)
  const cut = (await readFile(target, 'utf8')).slice(0, -3)
  await writeFile(target, cut)
  const link = join(folder, 'link.har')
  await symlink(target, link)
  await t.rejects(repairHarFile(link), { code: 'FFP_ERR_CAPTURE_NOT_A_FILE' })
  t.equal(await readFile(target, 'utf8'), cut, 'the link\'s target is not touched')

  const none = runBin(t, ['har-repair'])
  t.equal(await none.exited, 1)
  t.equal(none.stderr(), 'forward-proxy: har-repair takes one capture file: forward-proxy har-repair FILE\n')
})

test('a writer killed with SIGKILL leaves a file that is valid, or that repairHarFile makes valid with every whole entry', async (t) => {
  const folder = await scratchFolder(t)
  // Killed once the writer reported a write done (most likely between two writes: the file is
  // valid as it is), then twice while a write is in flight (most likely cut short: repaired).
  const moments = ['written', 'writing', 'writing'] as const
  let repaired = 0
  for (const [round, moment] of moments.entries()) {
    const path = join(folder, `killed-${round}.har`)
    const child = spawn(process.execPath, ['--import', TS_LOADER, join(__dirname, 'helpers', 'har-writer-child.ts'), path], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_, signal) => resolve(signal)))
    const reported = await new Promise<number>((resolve, reject) => {
      let written = 0
      let output = ''
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString()
        for (let end = output.indexOf('\n'); end !== -1; end = output.indexOf('\n')) {
          const line = output.slice(0, end)
          output = output.slice(end + 1)
          if (line.startsWith('written ')) written = Number(line.slice('written '.length))
          if (written >= 4 && line.startsWith(moment) && child.signalCode === null) {
            child.kill('SIGKILL')
            resolve(written)
          }
        }
      })
      void exited.then(() => reject(new Error(`the writer exited first: ${stderr}`)))
    })
    t.equal(await exited, 'SIGKILL')
    const text = await readFile(path, 'utf8')
    const whole = wholeEntryLines(text)
    let valid = true
    try {
      JSON.parse(text)
    } catch {
      valid = false
    }
    const result = await repairHarFile(path)
    if (!valid) repaired++
    t.equal(result.changed, !valid, valid ? 'left as it is' : `cut in the middle of a write, repaired (${result.droppedBytes} bytes dropped)`)
    const seqs = await sequenceOf(path)
    t.equal(seqs.length, whole, 'every whole entry line is kept')
    t.strictSame(seqs, range(0, seqs.length), 'the entries in order, none missing')
    t.ok(seqs.length >= reported, `every entry reported written is there (${reported} reported, ${seqs.length} in the file)`)
  }
  t.comment(`${repaired} of ${moments.length} killed writers left a file to repair`)
})
