import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfigFile } from './helpers/internals'
import { runBin } from './helpers/cli-bin'
import { jsonSyntaxError } from '../lib/cli/json-syntax-error'

const PASSWORD = 'hunter2-5b1c'

/** Files that are not JSON, each with a password near the mistake, and where the mistake is. */
const CASES: Array<{ name: string, text: string, where: string }> = [
  { name: 'an unquoted password', text: `{\n  "users": { "alice": ${PASSWORD} }\n}\n`, where: 'line 2, column 23: an unexpected character (a value must be a string in double quotes, a number, true, false, null, an object or an array)' },
  { name: 'a single-quoted password', text: `{ "users": { "bob": '${PASSWORD}' } }`, where: 'line 1, column 21: a single quote (JSON strings take double quotes)' },
  { name: 'a password with a line break in it', text: `{ "users": { "carol": "${PASSWORD}\n" } }`, where: 'line 1, column 36: a line break or control character inside a string' },
  { name: 'a trailing comma', text: `{ "users": { "dave": "${PASSWORD}", } }`, where: 'line 1, column 38: a comma before \'}\'' },
  { name: 'a missing comma', text: `{ "users": { "erin": "${PASSWORD}" "frank": "x" } }`, where: 'line 1, column 37: expected \',\' or \'}\'' },
  { name: 'a file cut short', text: `{ "users": { "gina": "${PASSWORD}"`, where: 'line 1, column 36: the file ends too early' },
  { name: 'a byte order mark', text: `\uFEFF{ "users": { "hal": "${PASSWORD}" } }`, where: 'line 1, column 1: a byte order mark (save the file as UTF-8 without one)' }
]

test('a configuration file that is not JSON is refused with the line, the column and what is wrong there, never the text around it (JSON.parse\'s own message quotes it, and it may be a password)', async (t) => {
  const dir = t.testdir({})
  for (const { name, text, where } of CASES) {
    const file = join(dir, 'proxy.json')
    writeFileSync(file, text)
    const error = (() => {
      try {
        loadConfigFile(file)
        return null
      } catch (caught) {
        return caught as Error
      }
    })()
    t.equal(error?.message, `${file}: not valid JSON: ${where}`, name)
    t.notMatch(error?.message ?? '', PASSWORD, `${name}: the password is not in the message`)
  }
})

test('bin: the start-up refusal of a file that is not JSON holds no part of it', async (t) => {
  const dir = t.testdir({ 'proxy.json': `{ "users": { "alice": ${PASSWORD} } }` })
  const refused = runBin(t, ['--config', join(dir, 'proxy.json')])
  t.equal(await refused.exited, 1)
  t.equal(refused.stderr(), `forward-proxy: ${join(dir, 'proxy.json')}: not valid JSON: line 1, column 23: an unexpected character (a value must be a string in double quotes, a number, true, false, null, an object or an array)\n`)
})

test('the locator agrees with JSON.parse on what is JSON, and survives nesting too deep for recursion', async (t) => {
  for (const text of ['{}', '[]', '0', '-1.5e+3', '"a\\u00e9\\n"', '{"a":[1,true,null,{"b":"c"}]}', ' \n{ "x" : [ ] }\n ']) {
    t.equal(jsonSyntaxError(text), null, `${text} is JSON`)
  }
  for (const text of ['', '{', '[1,]', '{"a" 1}', '01', '"\\x"', 'tru', '[1] 2', '{"a":1,}', '{,}']) {
    t.throws(() => JSON.parse(text), `${text} is not JSON`)
    t.not(jsonSyntaxError(text), null, `${text}: a place is found`)
  }
  t.match(jsonSyntaxError('['.repeat(200_000)), { problem: 'the file ends too early' })
})
