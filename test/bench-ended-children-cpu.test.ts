import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { test } from 'tap'

// The per-request suite reads a client's CPU as the rise of the harness's ended children's CPU
// (cutime + cstime of /proc/self/stat) across the client's run. Read the wrong fields (the
// harness's own time, say) and every client figure is silently wrong; this provokes the rise.
interface Processes { endedChildrenCpuSeconds: () => number }
async function load (): Promise<Processes> {
  return await import(pathToFileURL(join(__dirname, '..', 'bench', 'compare', 'processes.mjs')).href) as Processes
}

/** A child that spins until it has used `ms` of its own CPU time, whatever the machine's load. */
const SPIN = 'const end = Number(process.argv[1]) * 1000; while (process.cpuUsage().user < end) {}'

test('a child that used CPU and was waited for raises the ended children\'s CPU by that much', async (t) => {
  const { endedChildrenCpuSeconds } = await load()
  const before = endedChildrenCpuSeconds()
  // The harness itself waits here and spends almost nothing: its own time does not move the figure.
  execFileSync(process.execPath, ['-e', SPIN, '400'])
  const rise = endedChildrenCpuSeconds() - before
  t.ok(rise >= 0.35, `the child's 0.4 s of CPU counted (rose by ${rise} s)`)
  t.ok(rise < 5, `only the child's CPU counted (rose by ${rise} s)`)
})
