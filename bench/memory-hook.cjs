// Preloaded into the proxy by bench/memory.mjs and bench/idle-build-ab.mjs (`node --require`),
// never part of the product: on SIGUSR2 it writes one line to stderr, `memory-usage <JSON>`, with
// process.memoryUsage() and the size of each V8 heap space (MiB), so the benchmark can tell
// heap, array buffers, code and the rest of RSS apart. With MEMORY_HOOK_GC=1 (and --expose-gc)
// a full collection runs first; with MEMORY_HOOK_GC=last-resort, V8's "last resort" collection
// (the one meant to give memory back), reached without --expose-gc.
'use strict'
const v8 = require('node:v8')

// Two decimals: bench/idle-build-ab.mjs compares builds whose live heaps differ by tenths.
const mib = (bytes) => Math.round(bytes / 1048576 * 100) / 100

process.on('SIGUSR2', () => {
  if (process.env.MEMORY_HOOK_GC === '1' && typeof global.gc === 'function') global.gc()
  if (process.env.MEMORY_HOOK_GC === 'last-resort') {
    v8.setFlagsFromString('--expose-gc')
    require('node:vm').runInNewContext('gc')({ type: 'major', execution: 'sync', flavor: 'last-resort' })
  }
  const usage = process.memoryUsage()
  const spaces = {}
  for (const space of v8.getHeapSpaceStatistics()) spaces[space.space_name] = { size: mib(space.space_size), used: mib(space.space_used_size) }
  const line = {
    rss: mib(usage.rss),
    heapTotal: mib(usage.heapTotal),
    heapUsed: mib(usage.heapUsed),
    external: mib(usage.external),
    arrayBuffers: mib(usage.arrayBuffers),
    spaces,
    modules: Object.keys(require.cache).length
  }
  process.stderr.write(`memory-usage ${JSON.stringify(line)}\n`)
})
