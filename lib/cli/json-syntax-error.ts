// Where a configuration file stops being JSON, told without quoting it: JSON.parse's own message
// quotes the text around the error, which in a configuration file may be a password.

/** The first place a text is not JSON, 1-based, and what is wrong there. */
export interface JsonSyntaxError {
  readonly line: number
  readonly column: number
  readonly problem: string
}

type Expecting = 'value' | 'first-key' | 'first-value' | 'key' | 'colon' | 'after-value'

/**
 * Finds the first character of `text` that cannot be JSON (RFC 8259), or its end when it stops
 * too early. Iterative, so that deep nesting cannot overflow the stack. Null when `text` is JSON.
 */
export function jsonSyntaxError (text: string): JsonSyntaxError | null {
  const containers: Array<'{' | '['> = []
  let expecting: Expecting = 'value'
  let at = 0
  const fail = (problem: string): JsonSyntaxError => ({ ...lineAndColumn(text, at), problem })
  for (;;) {
    at = skipSpace(text, at)
    const char = text[at]
    if (char === undefined) return containers.length === 0 && expecting === 'after-value' ? null : fail('the file ends too early')
    if (expecting === 'after-value') {
      const inside = containers[containers.length - 1]
      if (inside === undefined) return fail('more text after the value')
      if (char === ',') expecting = inside === '{' ? 'key' : 'value'
      else if (char === (inside === '{' ? '}' : ']')) containers.pop()
      else return fail(`expected ',' or '${inside === '{' ? '}' : ']'}'`)
      at++
      continue
    }
    if (expecting === 'colon') {
      if (char !== ':') return fail('expected \':\' after a key')
      expecting = 'value'
      at++
      continue
    }
    if ((expecting === 'key' && char === '}') || (expecting === 'value' && char === ']' && containers[containers.length - 1] === '[')) {
      return fail(`a comma before '${char}'`)
    }
    if ((expecting === 'first-key' && char === '}') || (expecting === 'first-value' && char === ']')) {
      containers.pop()
      expecting = 'after-value'
      at++
      continue
    }
    if (expecting === 'first-key' || expecting === 'key') {
      if (char !== '"') return fail('expected a key in double quotes')
      const end = stringEnd(text, at)
      if (typeof end !== 'number') return { ...lineAndColumn(text, end.at), problem: end.problem }
      at = end
      expecting = 'colon'
      continue
    }
    if (char === '{' || char === '[') {
      containers.push(char)
      expecting = char === '{' ? 'first-key' : 'first-value'
      at++
      continue
    }
    const end = char === '"' ? stringEnd(text, at) : scalarEnd(text, at)
    if (typeof end !== 'number') return { ...lineAndColumn(text, end.at), problem: end.problem }
    at = end
    expecting = 'after-value'
  }
}

interface Failure {
  readonly at: number
  readonly problem: string
}

function skipSpace (text: string, at: number): number {
  while (at < text.length && (text[at] === ' ' || text[at] === '\t' || text[at] === '\n' || text[at] === '\r')) at++
  return at
}

/** The index after the string that opens at `at`, or where it goes wrong. */
function stringEnd (text: string, at: number): number | Failure {
  for (let i = at + 1; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x22) return i + 1
    if (code < 0x20) return { at: i, problem: 'a line break or control character inside a string' }
    if (code !== 0x5c) continue
    const escaped = text[i + 1]
    if (escaped === 'u') {
      if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return { at: i, problem: 'an invalid \\u escape' }
      i += 5
    } else if (escaped !== undefined && '"\\/bfnrt'.includes(escaped)) {
      i++
    } else {
      return { at: i, problem: 'an invalid escape' }
    }
  }
  return { at: text.length, problem: 'a string that never ends' }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
const LITERAL = /true|false|null/y

/** The index after the number or literal at `at`, or where it goes wrong. */
function scalarEnd (text: string, at: number): number | Failure {
  for (const pattern of [NUMBER, LITERAL]) {
    pattern.lastIndex = at
    if (pattern.test(text)) return pattern.lastIndex
  }
  const problem = text.charCodeAt(at) === 0xfeff
    ? 'a byte order mark (save the file as UTF-8 without one)'
    : text[at] === '\'' ? 'a single quote (JSON strings take double quotes)' : 'an unexpected character (a value must be a string in double quotes, a number, true, false, null, an object or an array)'
  return { at, problem }
}

function lineAndColumn (text: string, at: number): { line: number, column: number } {
  let line = 1
  let lineStart = 0
  for (let i = text.indexOf('\n'); i !== -1 && i < at; i = text.indexOf('\n', i + 1)) {
    line++
    lineStart = i + 1
  }
  return { line, column: at - lineStart + 1 }
}
