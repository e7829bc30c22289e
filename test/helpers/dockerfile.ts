// A reader of the few Dockerfile instructions deploy/Dockerfile uses, for tests that check it
// without a container runtime (none on the test machines).

/** One `COPY` instruction. */
export interface DockerCopy {
  /** The stage it copies from (`--from=`), or undefined for the build context. */
  from?: string
  sources: string[]
  destination: string
}

/** One stage: from `FROM` to the next. */
export interface DockerStage {
  /** `AS name`, or its index as text. */
  name: string
  /** The last `WORKDIR`, `/` when none. */
  workdir: string
  copies: DockerCopy[]
  /** The commands of `RUN` (shell form), in order. */
  runs: string[]
  /** `USER`, when set. */
  user?: string
  /** `ENTRYPOINT`, `CMD` and the `HEALTHCHECK` command, exec form only (JSON arrays). */
  entrypoint?: string[]
  cmd?: string[]
  healthcheck?: string[]
  /** `ENV` names and values. */
  env: Record<string, string>
}

/** The stages of a Dockerfile's text, in order. Line continuations are joined, comments dropped. */
export function parseDockerfile (text: string): DockerStage[] {
  const stages: DockerStage[] = []
  const logical = text.split('\n').filter((line) => !/^\s*#/.test(line)).join('\n').replace(/\\\n/g, ' ')
  for (const line of logical.split('\n')) {
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line)
    if (match === null) continue
    const instruction = (match[1] ?? '').toUpperCase()
    const rest = (match[2] ?? '').trim()
    if (instruction === 'FROM') {
      const name = /\sAS\s+(\S+)$/i.exec(rest)?.[1] ?? String(stages.length)
      stages.push({ name, workdir: '/', copies: [], runs: [], env: {} })
      continue
    }
    const stage = stages.at(-1)
    if (stage === undefined) continue
    if (instruction === 'WORKDIR') stage.workdir = rest
    else if (instruction === 'COPY') stage.copies.push(parseCopy(rest))
    else if (instruction === 'RUN') stage.runs.push(rest)
    else if (instruction === 'USER') stage.user = rest
    else if (instruction === 'ENTRYPOINT') stage.entrypoint = execForm(rest)
    else if (instruction === 'CMD') stage.cmd = execForm(rest)
    else if (instruction === 'HEALTHCHECK') stage.healthcheck = execForm(rest.slice(rest.indexOf('CMD ') + 4))
    else if (instruction === 'ENV') {
      for (const pair of rest.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(\S*)/g)) stage.env[pair[1] ?? ''] = pair[2] ?? ''
    }
  }
  return stages
}

function parseCopy (rest: string): DockerCopy {
  const words = rest.split(/\s+/)
  let from: string | undefined
  while (words[0]?.startsWith('--') === true) {
    const flag = words.shift() ?? ''
    if (flag.startsWith('--from=')) from = flag.slice('--from='.length)
  }
  const paths = words[0]?.startsWith('[') === true ? execForm(words.join(' ')) : words
  const destination = paths.at(-1)
  if (destination === undefined || paths.length < 2) throw new Error(`COPY without a source and a destination: ${rest}`)
  return { ...(from === undefined ? {} : { from }), sources: paths.slice(0, -1), destination }
}

/** A JSON array instruction argument; throws for the shell form, which this reader does not take. */
function execForm (text: string): string[] {
  const value: unknown = JSON.parse(text)
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) throw new Error(`not an exec-form array: ${text}`)
  return value
}

/**
 * Whether a path of the build context passes a `.dockerignore` made of `*` and exact paths,
 * `!`-negated or not (the last matching line wins; a line matches a path or any folder above it).
 * @throws for a pattern of another shape, which this reader cannot judge.
 */
export function passesDockerignore (ignoreText: string, path: string): boolean {
  let included = true
  for (const raw of ignoreText.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    const negated = line.startsWith('!')
    const pattern = negated ? line.slice(1) : line
    if (pattern !== '*' && /[*?[\]]/.test(pattern)) throw new Error(`.dockerignore pattern this reader does not judge: ${line}`)
    const segments = path.split('/')
    const matches = pattern === '*' || segments.some((_, index) => segments.slice(0, index + 1).join('/') === pattern.replace(/\/$/, ''))
    if (matches) included = negated
  }
  return included
}
