import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

test('npm start runs the server with the Node options the benchmarks measure as shipped (bench/shipped-node-args.mjs), and no cap on the young generation', async (t) => {
  const root = join(__dirname, '..')
  const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  const { SHIPPED_NODE_ARGS } = await import(join(root, 'bench/shipped-node-args.mjs')) as { SHIPPED_NODE_ARGS: string[] }
  // `exec`: the shell npm runs the script in becomes node, so the signals npm forwards reach it.
  t.equal(start, ['exec', 'node', ...SHIPPED_NODE_ARGS, 'dist/lib/cli/main.js'].join(' '))
  // A capped young generation costs 50 to 90% more CPU per request once destinations take any
  // time to answer (bench/young-generation.mjs).
  t.notMatch(start, /--max-semi-space-size/)
})
