import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfigFile, startupSummary } from './helpers/internals'

const root = join(__dirname, '..')
const configurationDoc = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8')

test('docs: the configuration reference quotes examples/proxy.example.json as shipped', async (t) => {
  const examples = configurationDoc.slice(configurationDoc.indexOf('\n## Examples'))
  const quoted = /```json\n([\s\S]*?)\n```/.exec(examples)?.[1]
  t.ok(quoted, 'the Examples section quotes a JSON file')
  const shipped: unknown = JSON.parse(readFileSync(join(root, 'examples', 'proxy.example.json'), 'utf8'))
  t.same(JSON.parse(quoted ?? 'null'), shipped)
})

test('docs: the sample start-up summary\'s limits line is what the server prints for the default limits', async (t) => {
  const documented = configurationDoc.split('\n').find((line) => line.trimStart().startsWith('limits: '))?.trim()
  const printed = startupSummary(loadConfigFile(join(root, 'examples', 'proxy.example.json')), ['http://127.0.0.1:8080'])
    .find((line) => line.trimStart().startsWith('limits: '))?.trim()
  t.ok(printed)
  t.equal(documented, printed)
})
