import { readFileSync } from 'node:fs'

/** One shell block of a Markdown file marked runnable (```` ```sh runnable ````). */
export interface RunnableBlock {
  /** The file, relative to the repository. */
  readonly file: string
  /** The line of the opening fence (1-based). */
  readonly line: number
  /** The shell code. */
  readonly code: string
  /**
   * `background=PORT`: the block ends in a server that keeps running; it is started in the
   * background, ready once PORT accepts connections, and stopped when the file's blocks end.
   */
  readonly background?: number
}

const OPENING = /^```sh runnable(?:[ \t]+(.*))?$/
const CLOSING = /^```[ \t]*$/

/**
 * The runnable blocks of a Markdown file, in order.
 * @throws Error for an option other than `background=PORT`, or a block never closed.
 */
export function runnableBlocks (path: string, file: string): RunnableBlock[] {
  const lines = readFileSync(path, 'utf8').split('\n')
  const blocks: RunnableBlock[] = []
  for (let index = 0; index < lines.length; index++) {
    const opening = OPENING.exec(lines[index] ?? '')
    if (opening === null) continue
    let background: number | undefined
    for (const option of (opening[1] ?? '').split(/\s+/).filter((word) => word !== '')) {
      const port = /^background=(\d{1,5})$/.exec(option)
      if (port === null) throw new Error(`${file}:${index + 1}: unknown option "${option}" of a runnable block (only background=PORT)`)
      background = Number(port[1])
    }
    const end = lines.findIndex((line, at) => at > index && CLOSING.test(line))
    if (end === -1) throw new Error(`${file}:${index + 1}: runnable block never closed`)
    blocks.push({ file, line: index + 1, code: lines.slice(index + 1, end).join('\n'), ...(background === undefined ? {} : { background }) })
    index = end
  }
  return blocks
}

/**
 * `blocks` with every port a background block names replaced by the port in `ports` (the same
 * number anywhere in the file's blocks: a listener, a URL, an `allowedPorts` entry).
 */
export function withPorts (blocks: readonly RunnableBlock[], ports: ReadonlyMap<number, number>): RunnableBlock[] {
  return blocks.map((block) => {
    let code = block.code
    for (const [documented, actual] of ports) code = code.replace(new RegExp(`\\b${documented}\\b`, 'g'), String(actual))
    return { ...block, code, ...(block.background === undefined ? {} : { background: ports.get(block.background) ?? block.background }) }
  })
}

// Loopback, and private addresses the proxy is shown refusing: neither is the internet.
const LOCAL_HOST = /^(?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|10(?:\.\d{1,3}){3}|192\.168(?:\.\d{1,3}){2}|172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2})$/
const URL_HOST = /\bhttps?:\/\/(?:[^\s/@'"]*@)?(\[[^\]\s]*\]|[A-Za-z0-9$][^\s/:'"()]*)/g

/** The hosts of the URLs in `code` that are neither loopback nor private addresses. */
export function nonLocalHosts (code: string): string[] {
  return [...code.matchAll(URL_HOST)].map((match) => match[1] ?? '').filter((host) => !LOCAL_HOST.test(host))
}
