import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'tap'
import { PROXY_ERROR_STATUS, ProxyError, type ProxyErrorType } from '../lib/index'
import { formatProxyStatus } from './helpers/internals'

const root = join(__dirname, '..')

/** The error type a client sees in `Proxy-Status` for an error the code builds. */
function wireType (type: ProxyErrorType): string {
  return /error=([a-z_]+)/.exec(formatProxyStatus('p', new ProxyError(type, 'm')))?.[1] ?? type
}

/**
 * Every `status type` pair the code answers with: each `new ProxyError('<type>', ...)` in lib/,
 * with the `status:` it passes or else the status its type maps to. A status the code picks at
 * run time (`status: someVariable`) is a 4xx from the parser or the framework: `4xx`.
 */
function pairsInCode (raised = new Set<string>()): Set<string> {
  const pairs = new Set<string>()
  const files = readdirSync(join(root, 'lib'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'))
  for (const file of files) {
    const source = readFileSync(join(root, 'lib', file), 'utf8')
    for (const match of source.matchAll(/new ProxyError\('(\w+)'([^\n]*)/g)) {
      const type = (match[1] ?? '') as ProxyErrorType
      const rest = match[2] ?? ''
      if (!(type in PROXY_ERROR_STATUS)) throw new Error(`${file}: unknown error type ${type}`)
      raised.add(type)
      const literal = /\bstatus: (\d{3})\b/.exec(rest)
      const computed = /\{ status(,| ?}|: [a-zA-Z])/.test(rest)
      const status = literal !== null ? literal[1] : computed ? '4xx' : String(PROXY_ERROR_STATUS[type])
      pairs.add(`${status} ${wireType(type)}`)
    }
  }
  return pairs
}

/** Every `status type` pair in docs/errors.md's errors table (one row per status, one or more types). */
function pairsInDocs (): Set<string> {
  const doc = readFileSync(join(root, 'docs', 'errors.md'), 'utf8')
  const section = /\n## Errors the proxy answers with\n([\s\S]*?)(?=\n## |$)/.exec(doc)?.[1]
  if (section === undefined) throw new Error('docs/errors.md has no "## Errors the proxy answers with" section')
  const pairs = new Set<string>()
  for (const row of section.matchAll(/^\| (\d{3}|4xx) \| ([^|]+) \|/gm)) {
    for (const type of (row[2] ?? '').matchAll(/`([a-z_]+)`/g)) pairs.add(`${row[1]} ${type[1]}`)
  }
  return pairs
}

test('docs/errors.md: the errors table lists exactly the statuses and Proxy-Status error types the code answers with', async (t) => {
  const code = pairsInCode()
  const documented = pairsInDocs()
  t.ok(code.size > 20, `found the code's error constructions (${code.size} pairs)`)
  t.ok(documented.size > 20, `read the table's rows (${documented.size} pairs)`)
  t.strictSame([...code].filter((pair) => !documented.has(pair)).sort(), [], 'every answer the code gives is in the table')
  t.strictSame([...documented].filter((pair) => !code.has(pair)).sort(), [], 'every row of the table is an answer the code gives')
})

test('every Proxy-Status error type in the code\'s table is one the proxy raises somewhere (no type kept that nothing answers with)', async (t) => {
  const raised = new Set<string>()
  pairsInCode(raised)
  t.strictSame(Object.keys(PROXY_ERROR_STATUS).filter((type) => !raised.has(type)).sort(), [])
})
