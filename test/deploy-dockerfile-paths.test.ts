import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, posix } from 'node:path'
import { promisify } from 'node:util'
import { t as file, test } from 'tap'
import { parseDockerfile, passesDockerignore, type DockerStage } from './helpers/dockerfile'

const ROOT = join(__dirname, '..')
const run = promisify(execFile)
const DOCKERFILE = readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8')
const DOCKERIGNORE = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
const stages = parseDockerfile(DOCKERFILE)

// The build-stage check compiles the sources (tsc), which a loaded machine can take a while over.
file.setTimeout(180_000)

function stage (name: string): DockerStage {
  const found = stages.find((candidate) => candidate.name === name)
  if (found === undefined) throw new Error(`deploy/Dockerfile has no stage ${name}`)
  return found
}

const finalStage = stages.at(-1) as DockerStage

/** Files of the package as `npm pack` would pack it now (dist/ as last built: `npm run build`). */
async function packedFiles (): Promise<string[]> {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 })
  const manifest = JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>
  return (manifest[0]?.files ?? []).map((packed) => packed.path)
}

/** `path` relative to `workdir` when it lies inside it. */
function insideWorkdir (workdir: string, path: string): string | undefined {
  const relative = posix.relative(workdir, posix.resolve(workdir, path))
  return relative.startsWith('..') || relative === '' ? undefined : relative
}

test('deploy/Dockerfile: every path it copies from the build context exists in the repository and passes .dockerignore', async (t) => {
  const fromContext = stages.flatMap((s) => s.copies.filter((copy) => copy.from === undefined).flatMap((copy) => copy.sources))
  t.ok(fromContext.length > 0, 'the Dockerfile copies from the build context')
  for (const source of fromContext) {
    t.ok(existsSync(join(ROOT, source)), `${source} exists in the repository`)
    t.ok(passesDockerignore(DOCKERIGNORE, source), `${source} is let through .dockerignore`)
  }
  t.notOk(passesDockerignore(DOCKERIGNORE, 'node_modules'), 'node_modules stays out of the context')
  t.notOk(passesDockerignore(DOCKERIGNORE, '.git'), '.git stays out of the context')
})

test('deploy/Dockerfile: the image holds only files of the npm package (and the production dependencies), and runs its bin as a non-root user', async (t) => {
  const packed = await packedFiles()
  t.ok(packed.includes('dist/lib/cli/main.js'), 'the package is built (run "npm run build" first)')
  const inPackage = (path: string): boolean => packed.includes(path) || packed.some((entry) => entry.startsWith(`${path}/`))

  for (const copy of finalStage.copies) {
    t.ok(copy.from !== undefined, `the final stage copies from a stage, never from the context (${copy.sources.join(' ')})`)
    const source = stage(copy.from ?? '')
    for (const path of copy.sources) {
      const relative = insideWorkdir(source.workdir, path)
      t.ok(relative !== undefined, `${path} is inside the ${source.name} stage's WORKDIR`)
      if (relative === 'node_modules') {
        t.ok(source.runs.some((command) => /npm ci\b.*--omit=dev/.test(command)), `${source.name}: node_modules holds the production dependencies only (npm ci --omit=dev)`)
      } else {
        t.ok(inPackage(relative ?? ''), `${relative ?? path} is in the npm package`)
        t.equal(insideWorkdir(finalStage.workdir, copy.destination), relative, `${relative ?? path} keeps its place in the package`)
      }
    }
  }

  t.same([finalStage.entrypoint?.[0], finalStage.entrypoint?.at(-1)], ['node', 'dist/lib/cli/main.js'], 'the entrypoint is the bin, exec form (node is PID 1 and gets the signals)')
  t.ok(inPackage('dist/lib/cli/main.js'), 'the entrypoint is a file of the package')
  const user = finalStage.user ?? 'root'
  t.match(user, /^\d+(:\d+)?$/, 'the user is numeric, so runAsNonRoot can check it')
  t.not(user.split(':')[0], '0', 'and it is not root')
  t.match(DOCKERFILE, /^ARG NODE_IMAGE=node:(22|24)-slim$/m, 'a current Node LTS')
})

test('deploy/Dockerfile: the build stage\'s sources alone build every file the final stage copies from it', async (t) => {
  const build = stage('build')
  const directory = mkdtempSync(join(tmpdir(), 'ffp-docker-build-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  const at = (path: string): string => join(directory, insideWorkdir(build.workdir, path) ?? '')
  for (const copy of build.copies) {
    t.equal(copy.from, undefined, 'the build stage copies from the context')
    const intoFolder = copy.destination.endsWith('/') || copy.sources.length > 1
    for (const source of copy.sources) {
      // As COPY does: a folder's content goes into the destination; a file into it when it is a folder.
      const isFolder = statSync(join(ROOT, source)).isDirectory()
      const target = !isFolder && intoFolder ? join(at(copy.destination), posix.basename(source)) : at(copy.destination)
      mkdirSync(isFolder ? target : dirname(target), { recursive: true })
      cpSync(join(ROOT, source), target, { recursive: true })
    }
  }
  // Instead of `npm ci` (no registry needed): the repository's own dev dependencies.
  symlinkSync(join(ROOT, 'node_modules'), join(directory, 'node_modules'))
  const commands = build.runs.filter((command) => !command.startsWith('npm ci'))
  t.same(commands, ['npm run build'], 'besides installing, the build stage runs the package\'s build')
  await run('npm', ['run', 'build'], { cwd: directory })
  const fromBuild = finalStage.copies.filter((copy) => copy.from === 'build').flatMap((copy) => copy.sources)
  for (const path of fromBuild) {
    t.ok(existsSync(at(path)), `${path} is built from the copied sources`)
  }
  t.ok(existsSync(at('dist/lib/cli/main.js')), 'the entrypoint among them')
})
