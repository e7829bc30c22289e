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

/** `npm pack` of the repository (prepack builds it first) into `directory`, with `env` if given. */
export async function packInto (directory: string, env?: NodeJS.ProcessEnv): Promise<PackedTarball> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', directory], { cwd: ROOT, ...(env === undefined ? {} : { env }), maxBuffer: 64 * 1024 * 1024 })
  // prepack's build output precedes the JSON on stdout.
  const manifest = JSON.parse(stdout.slice(stdout.indexOf('\n[') + 1)) as Array<{ filename: string, files: Array<{ path: string }> }>
  const entry = manifest[0]
  if (entry === undefined) throw new Error('npm pack printed no package')
  return { tarball: join(directory, entry.filename), files: entry.files.map((packed) => packed.path) }
}
