// Preloaded into a spawned bin (NODE_OPTIONS=--require) by test/cli-lazy-modules.test.ts: on
// SIGUSR2 it writes `loaded-packages <JSON>` to stderr, the npm packages loaded so far.
'use strict'
process.on('SIGUSR2', () => {
  const packages = new Set()
  for (const path of Object.keys(require.cache)) {
    const match = path.match(/node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/)
    if (match !== null) packages.add(match[1].replace('\\', '/'))
  }
  process.stderr.write(`loaded-packages ${JSON.stringify([...packages].sort())}\n`)
})
