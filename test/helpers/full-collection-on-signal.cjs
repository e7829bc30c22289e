// Preloaded into a bin by test/cli-idle-memory-tick-entry.test.ts (with --expose-gc): on SIGUSR2
// runs, from a timer, while no process.nextTick entry is alive, one V8 collection that reduces
// the heap (such as a later release after traffic, or V8's memory reducer; an ordinary full
// collection did not free the entry's map), then prints "full collection done" on stderr.
'use strict'
process.on('SIGUSR2', () => {
  setImmediate(() => {
    globalThis.gc({ type: 'major', flavor: 'last-resort' })
    process.stderr.write('full collection done\n')
  })
})
