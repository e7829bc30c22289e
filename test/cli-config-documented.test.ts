import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CONFIG_SCHEMA } from './helpers/internals'

interface Node { properties?: Record<string, Node>, items?: Node }

function keyPaths (node: Node, prefix: string): string[] {
  const paths: string[] = []
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const path = prefix === '' ? name : `${prefix}.${name}`
    paths.push(path)
    paths.push(...keyPaths(child, path))
    if (child.items !== undefined) paths.push(...keyPaths(child.items, `${path}[]`))
  }
  return paths
}

test('docs: every key of the configuration schema has a row in docs/configuration.md', async (t) => {
  const docs = readFileSync(join(__dirname, '..', 'docs', 'configuration.md'), 'utf8')
  const paths = keyPaths(CONFIG_SCHEMA as unknown as Node, '').map((path) => path.replace('.[]', '[]'))
  t.ok(paths.includes('listen[].tls'), `walked the nested keys: ${paths.join(', ')}`)
  for (const path of paths) t.ok(docs.includes(`| \`${path}\` |`), `documented: ${path}`)
})
