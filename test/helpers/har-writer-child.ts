// A process that appends capture entries continuously, for a test to kill with SIGKILL:
// `node --import tsx har-writer-child.ts FILE`. Each entry is a HAR entry numbered in `_seq` from
// 0. It prints `writing` when a write has just been handed to the disk (entries of 16 MiB, so
// the write takes a while: a kill then lands in the middle of it), and `written N` once N entries
// are on the disk and none is being written.

import { HarFileWriter } from '../../lib/capture/har-file'
import { CREATOR, harEntry } from './har-capture'

const path = process.argv[2]
if (path === undefined) throw new Error('usage: har-writer-child.ts FILE')
const writer = new HarFileWriter({ path, maxFileBytes: 2 ** 40, keepFiles: 1, creator: CREATOR, maxQueuedBytes: 2 ** 30 }, (error) => {
  process.stderr.write(`stopped: ${error.message}\n`)
  process.exit(2)
})

const body = 'x'.repeat(16 << 20)
const entryOf = (seq: number): string => harEntry(seq).replace('"_seq":', `"_body":"${body}","_seq":`)

async function appendForEver (): Promise<void> {
  for (let seq = 0; ;) {
    writer.append(entryOf(seq++))
    writer.append(entryOf(seq++))
    // The writer's loop runs once these appends return, and has its write in flight by then.
    setImmediate(() => process.stdout.write('writing\n'))
    await writer.flushed()
    process.stdout.write(`written ${writer.written}\n`)
  }
}

void appendForEver()
