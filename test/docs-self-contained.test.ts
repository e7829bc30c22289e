import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'tap'

const ROOT = join(__dirname, '..')

// Documents a package user never has: the product spec, the design notes, the review lists and
// the issue tracker. Docs state the rule itself instead.
const UNFOLLOWABLE = /\bSPEC \d|\bSPEC\.md\b|\bdesign card\b|\bHOSTILE \d|\bissue #?\d+|\(issue\b|\bperformance issue\b/i

test('docs: README, CHANGELOG, docs/ and the examples\' README cite no spec section, design card, review item or issue number', async (t) => {
  const files = ['README.md', 'CHANGELOG.md', 'examples/est-dev-service/README.md',
    ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)]
  const found: string[] = []
  for (const file of files) {
    readFileSync(join(ROOT, file), 'utf8').split('\n').forEach((line, index) => {
      const match = UNFOLLOWABLE.exec(line)
      if (match !== null) found.push(`${file}:${index + 1}: ${match[0]}`)
    })
  }
  t.ok(files.length > 5, `${files.length} files read`)
  t.strictSame(found, [], 'no reference a reader cannot follow')
})
