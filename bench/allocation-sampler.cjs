// Loaded with `node --require` into a process under test by bench/allocation.mjs: the first
// SIGUSR2 starts V8's sampling heap profiler (every 256 bytes on average, objects already
// collected by either GC included, so it counts what was allocated, not what survived); the
// next SIGUSR2 stops it and writes /tmp/ffp-allocation-<pid>.json: the bytes sampled in all,
// and the functions that allocated most (self bytes).
const inspector = require('node:inspector')
const { writeFileSync } = require('node:fs')

const session = new inspector.Session()
session.connect()
let sampling = false
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true
    session.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
    return
  }
  sampling = false
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (error !== null) throw error
    const byFunction = new Map()
    let total = 0
    const walk = (node) => {
      const frame = node.callFrame
      const where = frame.url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/')
      const name = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`
      total += node.selfSize
      byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize)
      for (const child of node.children) walk(child)
    }
    walk(result.profile.head)
    const top = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 60)
    writeFileSync(`/tmp/ffp-allocation-${process.pid}.json`, JSON.stringify({ total, top }))
  })
})
