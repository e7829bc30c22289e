// Where a Node process's resident memory is, read from /proc/PID/smaps (Linux, glibc): what
// bench/memory.mjs and the per-request suite report beside RSS, so that a budget says which
// allocator holds the memory and not only how much there is.
//
// The mappings are told apart by shape, since smaps names only the brk heap and files:
// - V8 reserves each page of its heap (every space but large objects) as its own 256 KiB
//   anonymous mapping;
// - glibc gives each thread that calls malloc, up to 8 per core, an arena of its own: a 64 MiB
//   reservation aligned to 64 MiB, whose used part is the mapping that starts on the boundary;
//   the main thread's arena is the brk heap, `[heap]`;
// - the rest of the anonymous memory is thread stacks, V8's large objects and code, malloc's
//   blocks of 128 KiB and more (Buffers' backing stores among them), WebAssembly memory.
import { readFileSync } from 'node:fs'

const V8_PAGE_BYTES = 256 * 1024
const ARENA_ALIGNMENT = 64 * 1024 * 1024

/**
 * MiB of `pid`'s RSS in each part: `v8Pages` (V8's heap pages), `mainMalloc` (the main thread's
 * malloc, the brk heap), `threadMalloc` (the arenas of the other threads: V8's compiler and GC
 * helpers, libuv's pool), `otherAnonymous` and `fileBacked` (the binary, libraries, files).
 */
export function rssParts (pid) {
  const kib = { v8Pages: 0, mainMalloc: 0, threadMalloc: 0, otherAnonymous: 0, fileBacked: 0 }
  let mapping
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (head !== null) {
      const start = parseInt(head[1], 16)
      mapping = { start, bytes: parseInt(head[2], 16) - start, name: head[3] }
      continue
    }
    const field = /^(Rss|Anonymous):\s+(\d+) kB/.exec(line)
    if (field === null || mapping === undefined) continue
    const size = Number(field[2])
    if (mapping.name.startsWith('/')) {
      // A file's pages: its own (Rss) less the private copies written to (Anonymous).
      kib.fileBacked += field[1] === 'Rss' ? size : -size
      if (field[1] === 'Anonymous') kib.otherAnonymous += size
    } else if (field[1] === 'Anonymous') {
      kib[partOf(mapping)] += size
    }
  }
  return Object.fromEntries(Object.entries(kib).map(([part, value]) => [part, value / 1024]))
}

function partOf ({ start, bytes, name }) {
  if (name === '[heap]') return 'mainMalloc'
  if (name !== '') return 'otherAnonymous'
  if (bytes === V8_PAGE_BYTES) return 'v8Pages'
  if (start % ARENA_ALIGNMENT === 0) return 'threadMalloc'
  return 'otherAnonymous'
}
