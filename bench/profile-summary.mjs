// Summarizes a V8 CPU profile (`node --cpu-prof`): the functions with the most self time, with
// their share of all samples ("(idle)" is time waiting in epoll, syscalls show under the native
// function that made them, e.g. writev), and optionally the inclusive share of the functions
// whose name or file matches a pattern.
// `node bench/profile-summary.mjs <file.cpuprofile> [top=30] [inclusive-pattern]`
import { readFileSync } from 'node:fs'

const [file, topText = '30', pattern] = process.argv.slice(2)
const profile = JSON.parse(readFileSync(file, 'utf8'))
const top = Number(topText)
const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
const parents = new Map()
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id)
const label = ({ callFrame: f }) => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^file:.*\/(dist|bench)\//, '$1/')}:${f.lineNumber + 1}`

const hits = new Map()
for (const sample of profile.samples) hits.set(sample, (hits.get(sample) ?? 0) + 1)
const self = new Map()
const inclusive = new Map()
let total = 0
for (const [id, count] of hits) {
  total += count
  self.set(label(nodes.get(id)), (self.get(label(nodes.get(id))) ?? 0) + count)
  const seen = new Set()
  for (let current = id; current !== undefined; current = parents.get(current)) {
    const key = label(nodes.get(current))
    if (seen.has(key)) continue
    seen.add(key)
    inclusive.set(key, (inclusive.get(key) ?? 0) + count)
  }
}
const share = (count) => `${(100 * count / total).toFixed(1).padStart(5)}%`
console.log(`${total} samples; self time:`)
for (const [key, count] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${share(count)}  ${key}`)
if (pattern !== undefined) {
  const match = new RegExp(pattern)
  console.log(`\ninclusive time of functions matching /${pattern}/:`)
  for (const [key, count] of [...inclusive].filter(([key]) => match.test(key)).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${share(count)}  ${key}`)
}
