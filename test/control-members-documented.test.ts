import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'tap'

const ROOT = join(__dirname, '..')

test('docs: every member of the fastify.forwardProxy decorator (types/control.ts) is named in docs/api.md', async (t) => {
  const types = readFileSync(join(ROOT, 'types', 'control.ts'), 'utf8')
  const body = /export interface ForwardProxyControl \{([\s\S]*?)\n\}/.exec(types)?.[1]
  t.ok(body, 'the interface is found')
  // Member lines start at two spaces of indentation; TSDoc lines start with `*` or `/**`.
  const members = [...(body ?? '').matchAll(/^ {2}(?:readonly )?([a-zA-Z]+)\s*[:(]/gm)].map((match) => match[1] as string)
  t.ok(members.length >= 7, `${members.length} members read: ${members.join(', ')}`)
  const doc = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8')
  t.strictSame(members.filter((name) => !new RegExp(`(\`|forwardProxy\\.)${name}\\b`).test(doc)), [], 'each is named in code (`name` or forwardProxy.name)')
})
