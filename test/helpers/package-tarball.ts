import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'

const ROOT = join(__dirname, '..', '..')
const run = promisify(execFile)

/** What `npm pack` made: the tarball's path and the files it holds. */
export interface PackedTarball {
  tarball: string
  files: string[]
}

/** How {@link packInto} packs. */
export interface PackOptions {
  /** The environment npm runs in; the test's own when absent. */
  env?: NodeJS.ProcessEnv
  /**
   * Whether prepack builds dist/ first (the default, as for a user). False packs dist/ as it is,
   * for tests that run beside others: tsc rewrites each file in place, so a build during the
   * parallel suite lets another test's bin load a half-written module.
   */
  build?: boolean
}

/** `npm pack` of the repository into `directory`. */
export async function packInto (directory: string, options: PackOptions = {}): Promise<PackedTarball> {
  const args = ['pack', '--json', '--pack-destination', directory, ...(options.build === false ? ['--ignore-scripts'] : [])]
  const { stdout } = await run('npm', args, { cwd: ROOT, ...(options.env === undefined ? {} : { env: options.env }), maxBuffer: 64 * 1024 * 1024 })
  // prepack's build output, when it runs, precedes the JSON on stdout.
  const manifest = JSON.parse(stdout.slice(stdout.indexOf('\n[') + 1)) as Array<{ filename: string, files: Array<{ path: string }> }>
  const entry = manifest[0]
  if (entry === undefined) throw new Error('npm pack printed no package')
  return { tarball: join(directory, entry.filename), files: entry.files.map((packed) => packed.path) }
}
