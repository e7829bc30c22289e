import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * The `--import` URL that lets a child Node process run the TypeScript sources directly: tsx, the
 * same loader the test runner uses (package.json `tap.node-arg`), so children start as fast as tests.
 */
export const TS_LOADER = pathToFileURL(join(__dirname, '..', '..', 'node_modules/tsx/dist/loader.mjs')).href

/**
 * The environment for a Node process a test starts: the test's own plus `extra` (a name set to
 * undefined is removed), without the inherited `NODE_OPTIONS` tap sets for its own bookkeeping (a process-info hook that would load into every
 * child and grandchild, costing each about half a second of start-up).
 */
export function childEnv (extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  delete env.NODE_OPTIONS
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  return env
}
