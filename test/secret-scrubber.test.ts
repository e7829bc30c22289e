import { test } from 'tap'
import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createSecretScrubber, holdBackBound, type SecretScrubber } from '../lib/security/secret-scrubber'
import { LONGEST_SPELLING, characterEscapes, escapedCharacterAt, secretForms } from '../lib/security/secret-forms'
import { percentEncoded } from '../lib/security/secret-values'

// '/', '+', '!' and '=' are escaped differently by every URL and JSON writer.
const VALUE = 'REAL1/ab+cd!ef=gh'
const PLACEHOLDER = 'PLACEHOLDER_ONE'
// The characters JSON and HTML writers escape: '"', '<', '>', '&', '\', "'".
const MARKUP_VALUE = 'tok"<en>&\\va/l\'ue'
const MARKUP_PLACEHOLDER = 'PLACEHOLDER_TWO'
// A '%' can be itself or the start of an escape: `%25` is an escaped '%', or '%', '2', '5'; and
// `%2541` is a twice-escaped 'A', or an escaped '%' then '41'.
const PERCENT_VALUE = '%41pct%25off'
const PERCENT_PLACEHOLDER = 'PLACEHOLDER_PCT'

const scrubber = createSecretScrubber([
  { name: 'api', value: VALUE, placeholder: PLACEHOLDER },
  { name: 'markup', value: MARKUP_VALUE, placeholder: MARKUP_PLACEHOLDER },
  { name: 'percent', value: PERCENT_VALUE, placeholder: PERCENT_PLACEHOLDER }
])

const hex = (character: string, upper: boolean): string => {
  const digits = character.charCodeAt(0).toString(16).padStart(2, '0')
  return upper ? digits.toUpperCase() : digits
}
const eachCharacter = (value: string, write: (character: string) => string): string => [...value].map(write).join('')
const base64 = (text: string, url = false): string => Buffer.from(text, 'latin1').toString(url ? 'base64url' : 'base64')

/** How writers put VALUE in text: in a URL, in JSON, in HTML. */
const TEXT_FORMS: Readonly<Record<string, string>> = {
  'as is': VALUE,
  'our percentEncoded (all but unreserved)': percentEncoded(VALUE),
  encodeURIComponent: encodeURIComponent(VALUE),
  'partly percent-encoded (only "+")': 'REAL1/ab%2Bcd!ef=gh',
  'every character percent-encoded, upper-case hex': eachCharacter(VALUE, (character) => `%${hex(character, true)}`),
  'every character percent-encoded, lower-case hex': eachCharacter(VALUE, (character) => `%${hex(character, false)}`),
  'twice percent-encoded (encodeURIComponent twice)': encodeURIComponent(encodeURIComponent(VALUE)),
  'every character twice percent-encoded': eachCharacter(VALUE, (character) => `%25${hex(character, true)}`),
  'JSON with escaped slashes (PHP)': 'REAL1\\/ab+cd!ef=gh',
  'JSON with every character as \\u00XX': eachCharacter(VALUE, (character) => `\\u00${hex(character, false)}`),
  'JSON with some characters as \\u00XX (Go escapes <, > and &; others escape +, =)': 'REAL1/ab\\u002bcd!ef\\u003dgh',
  'HTML numeric entities': 'REAL1&#x2F;ab&#43;cd&#33;ef&#61;gh',
  'a mix of all of these': '%52EAL1\\/ab%252Bcd&#33;ef\\u003Dg%68'
}

function scrubbed (text: string, using: SecretScrubber = scrubber): { text: string, found: string[] } {
  const found = new Set<string>()
  return { text: using.scrubText(text, found), found: [...found] }
}

test('the value is replaced by its placeholder in every URL, JSON and HTML encoding', async (t) => {
  for (const [name, form] of Object.entries(TEXT_FORMS)) {
    t.same(scrubbed(`{"echo":"${form}","n":1}`), { text: `{"echo":"${PLACEHOLDER}","n":1}`, found: ['api'] }, name)
  }
})

test('upper-cased and lower-cased echoes of every encoding of the value are replaced', async (t) => {
  for (const [name, form] of Object.entries(TEXT_FORMS)) {
    t.same(scrubbed(`x=${form.toUpperCase()};`), { text: `x=${PLACEHOLDER};`, found: ['api'] }, `${name}, upper-cased`)
    t.same(scrubbed(`x=${form.toLowerCase()};`), { text: `x=${PLACEHOLDER};`, found: ['api'] }, `${name}, lower-cased`)
  }
})

test('a value with quotes, angle brackets, ampersand and backslash is replaced however JSON or HTML escapes it', async (t) => {
  const forms: Record<string, string> = {
    'as is': MARKUP_VALUE,
    'JSON.stringify': JSON.stringify(MARKUP_VALUE).slice(1, -1),
    'Go encoding/json (\\u003c, \\u003e, \\u0026, \\/)': 'tok\\"\\u003cen\\u003e\\u0026\\\\va\\/l\\u0027ue',
    'HTML named entities': 'tok&quot;&lt;en&gt;&amp;\\va/l&apos;ue',
    'HTML numeric entities': 'tok&#34;&#60;en&#62;&#38;&#92;va&#47;l&#39;ue',
    encodeURIComponent: encodeURIComponent(MARKUP_VALUE),
    'HTML entities, upper-cased': 'TOK&QUOT;&LT;EN&GT;&AMP;\\VA/L&#X27;UE'
  }
  for (const [name, form] of Object.entries(forms)) {
    t.same(scrubbed(`<p>${form}</p>`), { text: `<p>${MARKUP_PLACEHOLDER}</p>`, found: ['markup'] }, name)
  }
})

test('a "%" in a value is found as itself, escaped once and escaped twice', async (t) => {
  const forms = {
    'as is': PERCENT_VALUE,
    encodeURIComponent: encodeURIComponent(PERCENT_VALUE),
    'encodeURIComponent twice': encodeURIComponent(encodeURIComponent(PERCENT_VALUE)),
    'only the second "%" escaped, once then twice': '%41pct%2525off'
  }
  for (const [name, form] of Object.entries(forms)) {
    t.same(scrubbed(`q=${form}&`), { text: `q=${PERCENT_PLACEHOLDER}&`, found: ['percent'] }, name)
  }
})

test('an escape is read as a character exactly when it is one of the listed escapes of that character', async (t) => {
  const listed = new Map<string, number>()
  for (let code = 0x21; code <= 0x7e; code++) for (const escape of characterEscapes(code)) listed.set(escape, code)
  const read = (text: string): string => {
    const decoded = escapedCharacterAt(Buffer.from(`${text}..`, 'latin1'), 0)
    return decoded < 0 ? 'none' : `${String.fromCharCode(decoded & 0xff)} in ${decoded >> 8}`
  }
  const expected = (text: string): string => {
    for (let length = Math.min(text.length, LONGEST_SPELLING); length > 1; length--) {
      const code = listed.get(text.slice(0, length).toLowerCase())
      if (code !== undefined) return `${String.fromCharCode(code)} in ${length}`
    }
    return 'none'
  }
  const wrong: string[] = []
  for (const [escape, code] of listed) {
    for (const text of [escape, escape.toUpperCase()]) if (read(text) !== `${String.fromCharCode(code)} in ${escape.length}`) wrong.push(text)
  }
  t.same(wrong, [], 'each listed escape, in either case, reads as its character')
  // Near misses: each listed escape with one character changed, or cut short.
  const alphabet = '%\\&#;xXuU0123456789aAbBcCdDeEfFgGlLmMoOpPqQsStT/"'
  for (const escape of listed.keys()) {
    for (let at = 0; at < escape.length; at++) {
      for (const character of alphabet) {
        const text = escape.slice(0, at) + character + escape.slice(at + 1)
        if (read(text) !== expected(text)) wrong.push(text)
      }
      const cut = escape.slice(0, at)
      if (read(cut) !== expected(cut)) wrong.push(cut)
    }
  }
  t.same(wrong, [], 'near misses read as the list says')
})

test('the base64 and base64url of the value are replaced wherever it sits in the encoded bytes', async (t) => {
  // The value preceded by 0, 1 or 2 bytes (modulo 3) lines up differently with base64's groups.
  for (const before of ['', 'x', 'xy', 'user:', 'abcd']) {
    for (const after of ['', 'z', 'zz', ':tail']) {
      const plain = `${before}${VALUE}${after}`
      for (const url of [false, true]) {
        for (const padded of [true, false]) {
          const encoded = padded ? base64(plain, url) : base64(plain, url).replace(/=+$/, '')
          const name = `${url ? 'base64url' : 'base64'} of ${JSON.stringify(plain)}${padded ? '' : ' unpadded'}`
          const result = scrubbed(`token ${encoded} end`)
          t.same(result.found, ['api'], name)
          // The characters made only of the value's bits start at `from` and end at `to`; the
          // next one holds its last bits and those of what follows (zeros when nothing does).
          const from = Math.ceil(before.length * 8 / 6)
          const to = Math.floor((before.length + VALUE.length) * 8 / 6)
          const start = `token ${encoded.slice(0, from)}${PLACEHOLDER}`
          t.ok(result.text.startsWith(start) && result.text.endsWith(' end'), `${name}: replaced from character ${from}`)
          const rest = result.text.slice(start.length, -' end'.length)
          if (after === '') t.equal(rest, '', `${name}: to the end, padding included`)
          else t.ok(encoded.endsWith(rest) && rest.length >= encoded.length - to - 1 && rest.length <= encoded.length - to, `${name}: up to character ${to} or the one after`)
        }
      }
    }
  }
})

test('base64 of the value with "+" and "/" escaped by a JSON or URL writer is replaced', async (t) => {
  const value = 'key~~~???>>>end'
  const local = createSecretScrubber([{ name: 'k', value, placeholder: 'PLACEHOLDER_K' }])
  const encoded = base64(value)
  t.match(encoded, /\+.*\//, 'the encoding holds both "+" and "/"')
  t.same(scrubbed(encoded.replace(/\//g, '\\/'), local), { text: 'PLACEHOLDER_K', found: ['k'] }, 'JSON "\\/"')
  t.same(scrubbed(encodeURIComponent(encoded), local), { text: 'PLACEHOLDER_K', found: ['k'] }, 'encodeURIComponent')
  t.same(scrubbed(base64(value, true), local), { text: 'PLACEHOLDER_K', found: ['k'] }, 'base64url')
})

test('base64 matches case for case: a changed case is another value', async (t) => {
  const encoded = base64(VALUE)
  t.same(scrubbed(encoded.toLowerCase()), { text: encoded.toLowerCase(), found: [] })
  t.same(scrubbed(encoded.toUpperCase()), { text: encoded.toUpperCase(), found: [] })
})

/** Every form above, between ordinary text, and the result of scrubbing it in one piece. */
function streamSample (): { input: Buffer, expected: Buffer } {
  const pieces = [
    ...Object.values(TEXT_FORMS),
    ...Object.values(TEXT_FORMS).map((form) => form.toUpperCase()),
    JSON.stringify(MARKUP_VALUE), 'tok&quot;&lt;en&gt;&amp;\\va/l&apos;ue', encodeURIComponent(encodeURIComponent(PERCENT_VALUE)),
    base64(VALUE), base64(`x${VALUE}`, true), base64(`xy${VALUE}zz`), base64(`abcd${VALUE}`)
  ]
  const input = Buffer.from(pieces.map((piece, index) => `data: {"n":${index},"v":"${piece}"} %2 & R\n\n`).join('') + 'last REAL1%2', 'latin1')
  const expected = Buffer.from(scrubber.scrubText(input.toString('latin1'), new Set()), 'latin1')
  return { input, expected }
}

function scrubChunks (chunks: readonly Buffer[]): { output: Buffer, mostHeld: number } {
  const stream = scrubber.chunkScrubber(new Set())
  const outputs: Buffer[] = []
  let mostHeld = 0
  for (const chunk of chunks) {
    outputs.push(stream.push(chunk))
    mostHeld = Math.max(mostHeld, stream.held)
  }
  outputs.push(stream.end())
  return { output: Buffer.concat(outputs), mostHeld }
}

test('a stream cut at any byte gives the same bytes as scrubbing it in one piece', async (t) => {
  const { input, expected } = streamSample()
  t.notOk(expected.includes(VALUE), 'the sample is scrubbed')
  for (let cut = 0; cut <= input.length; cut++) {
    const { output } = scrubChunks([input.subarray(0, cut), input.subarray(cut)])
    if (!output.equals(expected)) {
      t.fail(`cut at byte ${cut} gives other bytes`)
      return
    }
  }
  t.pass(`cut at each of the ${input.length + 1} places, the same bytes`)
  const bytes = Array.from({ length: input.length }, (_, index) => input.subarray(index, index + 1))
  t.ok(scrubChunks(bytes).output.equals(expected), 'one byte at a time, the same bytes')
  const piped: Buffer[] = []
  await pipeline(Readable.from(bytes), scrubber.transform(new Set()), async function * (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) piped.push(chunk)
  })
  t.ok(Buffer.concat(piped).equals(expected), 'through the Transform, one byte at a time, the same bytes')
})

test('a chunk that cannot end in the beginning of a form is sent whole, nothing held (server-sent events flow)', async (t) => {
  const stream = createSecretScrubber([{ name: 'api', value: VALUE, placeholder: PLACEHOLDER }]).chunkScrubber(new Set())
  const event = Buffer.from('data: {"n":1,"v":"%0A &#x2"}\n\n')
  t.equal(stream.push(event), event, 'the chunk itself, at once')
  t.equal(stream.held, 0)
  // The value's forms start with "R" or "r" (or its escapes "%52", "%2552", "\u0052", "&#82;",
  // "&#x52;", and those of "r"), or its base64's "U", "J" or "S".
  for (const ending of ['%0', '&#x2', '&#9', '\\u003', 'Rx', '%2X', 'u', 'j']) {
    const output = stream.push(Buffer.from(`event: e\ndata: ${ending}`))
    t.equal(output.toString(), `event: e\ndata: ${ending}`, `a chunk ending in ${JSON.stringify(ending)} is sent whole`)
    t.equal(stream.held, 0)
  }
})

test('only the trailing bytes that may begin a form are held back, and sent once settled', async (t) => {
  const found = new Set<string>()
  const stream = scrubber.chunkScrubber(found)
  // The value starts with "R": "%5", "%2" (of "%2552"), "&#x5" (of "&#x52;") and "\u005" may begin it.
  for (const ending of ['R', 'r', '%5', '%2', '&#x5', '&#8', '\\u005', 'REAL1%2', 'REAL1\\/ab+cd!ef=g']) {
    const output = stream.push(Buffer.from(`data: ${ending}`))
    t.equal(output.toString(), 'data: ', `${JSON.stringify(ending)} is held`)
    t.equal(stream.held, ending.length)
    t.equal(stream.push(Buffer.from('!\n\n')).toString(), `${ending}!\n\n`, 'and sent when the next chunk shows it is no form')
    t.equal(stream.held, 0)
  }
  t.equal(stream.push(Buffer.from('data: REAL1%2')).toString(), 'data: ')
  t.equal(stream.push(Buffer.from('Fab+cd!ef=gh\n\n')).toString(), `${PLACEHOLDER}\n\n`, 'a value cut between chunks is replaced')
  t.equal(stream.push(Buffer.from('REAL1/ab+cd!ef=g')).toString(), '')
  t.equal(stream.end().toString(), 'REAL1/ab+cd!ef=g', 'at the end, held bytes that are no form go out as they are')
  t.same([...found], ['api'])
})

test('what a stream holds back never exceeds the bound: the longest form less one byte', async (t) => {
  t.equal(LONGEST_SPELLING, Math.max(...Array.from({ length: 94 }, (_, index) => Math.max(...characterEscapes(0x21 + index).map((escape) => escape.length)))), 'the longest escape of a character')
  t.equal(holdBackBound(VALUE.length), 6 * 17 - 1)
  t.equal(scrubber.maxHoldBack, holdBackBound(VALUE.length), 'the bound of the scrubber: its longest value, six bytes a character')
  for (const value of ['~~~~~~~~', '????????', '>>>>>>>>>', '}}}}}}}}}}']) {
    t.ok(createSecretScrubber([{ name: 'x', value, placeholder: 'PLACEHOLDER_X' }]).maxHoldBack <= holdBackBound(value.length), `base64 forms of ${value} are shorter`)
  }
  const longest = eachCharacter(VALUE, (character) => `\\u00${hex(character, false)}`)
  const { output, mostHeld } = scrubChunks(Array.from(Buffer.from(`${longest} `), (byte) => Buffer.of(byte)))
  t.equal(output.toString(), `${PLACEHOLDER} `)
  t.equal(mostHeld, scrubber.maxHoldBack, 'the longest form, one byte at a time, holds exactly the bound')
  t.ok(scrubChunks(Array.from(streamSample().input, (byte) => Buffer.of(byte))).mostHeld <= scrubber.maxHoldBack, 'the sample never holds more')
})

test('the names of the secrets found are recorded, never their values', async (t) => {
  const found = new Set<string>()
  const stream = scrubber.chunkScrubber(found)
  stream.push(Buffer.from(`a ${base64(`xy${VALUE}`)} b ${encodeURIComponent(MARKUP_VALUE)} c`))
  stream.end()
  t.same([...found].sort(), ['api', 'markup'])
  const header = new Set<string>()
  t.equal(scrubber.scrubText(`Bearer ${PERCENT_VALUE}`, header), `Bearer ${PERCENT_PLACEHOLDER}`)
  t.same([...header], ['percent'])
  for (const name of [...found, ...header]) {
    t.notOk([VALUE, MARKUP_VALUE, PERCENT_VALUE].some((value) => value.includes(name) || name.includes(value)), `${name} is a name`)
  }
})

/** `bytes` pseudo-random bytes, the same every run. */
function pseudoRandom (bytes: number): Buffer {
  return Buffer.concat(Array.from({ length: Math.ceil(bytes / 32) }, (_, index) => createHash('sha256').update(`sample ${index}`).digest())).subarray(0, bytes)
}

test('ordinary text, JSON, HTML and base64 that hold no value are left byte for byte', async (t) => {
  const random = pseudoRandom(1 << 20)
  const texts = [
    'Lorem ipsum dolor sit amet, REAL estate: 1/2 off! a+b=c, ef=gh. R\u00e9al. <b>&amp;</b> &#x27;q&#x27;',
    JSON.stringify({ url: 'https://example.com/a/b?q=%2F%2B%21&r=%25%2525', html: '<a href="/x">\u00e9</a>', escaped: '\\u0052\\u0045' }),
    random.toString('base64'),
    random.toString('base64url'),
    encodeURIComponent(random.subarray(0, 65536).toString('latin1')),
    // One character short, one changed: close is not the same.
    'REAL1/ab+cd!ef=g', 'REAL1/ab+cd!ef=gX', '%52EAL1%2Fab%2Bcd%21ef%3Dg', base64(VALUE).slice(0, 20) + 'A'
  ]
  for (const text of texts) {
    const found = new Set<string>()
    t.equal(scrubber.scrubText(text, found), text, `${text.slice(0, 30)}... unchanged`)
    const bytes = Buffer.from(text, 'latin1')
    const stream = scrubber.chunkScrubber(found)
    const output = Buffer.concat([stream.push(bytes.subarray(0, 1000)), stream.push(bytes.subarray(1000)), stream.end()])
    t.ok(output.equals(bytes), 'and unchanged as a stream')
    t.equal(found.size, 0, 'no secret found')
  }
})

test('the Basic credentials the proxy built go back as exactly those the client sent', async (t) => {
  const sent = base64(`alice:${VALUE}`)
  const received = base64(`alice:${PLACEHOLDER}`)
  const withBasic = scrubber.withExactForms([{ text: sent, replacement: received, secret: 'api' }])
  t.same(scrubbed(`Basic ${sent}`, withBasic), { text: `Basic ${received}`, found: ['api'] }, 'in a header')
  const found = new Set<string>()
  const stream = withBasic.chunkScrubber(found)
  const body = Buffer.from(`{"authorization":"Basic ${sent}"}`)
  const output = Buffer.concat([stream.push(body.subarray(0, 30)), stream.push(body.subarray(30)), stream.end()])
  t.equal(output.toString(), `{"authorization":"Basic ${received}"}`, 'in a body cut inside the credentials')
  t.same([...found], ['api'])
  t.not(scrubbed(`Basic ${sent}`).text, `Basic ${received}`, 'without the exact form, only the value\'s own characters are replaced')
  t.notOk(scrubbed(`Basic ${sent}`).text.includes(sent), 'though the value is still gone')
  t.ok(withBasic.maxHoldBack >= scrubber.maxHoldBack, 'the bound covers the exact forms too')
  t.throws(() => scrubber.withExactForms([{ text: '', replacement: 'x', secret: 'api' }]), TypeError)
})

test('values that overlap in the text are both replaced, leaving no tail of either', async (t) => {
  const overlapping = createSecretScrubber([
    { name: 'first', value: 'abcdefgh12', placeholder: 'PLACEHOLDER_A' },
    { name: 'second', value: '12345678xy', placeholder: 'PLACEHOLDER_B' }
  ])
  const found = new Set<string>()
  t.equal(overlapping.scrubText('<abcdefgh12345678xy>', found), '<PLACEHOLDER_APLACEHOLDER_B>')
  t.same([...found], ['first', 'second'])
})

test('header text with characters above U+00FF is scrubbed around them', async (t) => {
  t.same(scrubbed(`\u20ac ${VALUE}\u2603${encodeURIComponent(VALUE)}`), { text: `\u20ac ${PLACEHOLDER}\u2603${PLACEHOLDER}`, found: ['api'] })
})

test('a value that is not 8 to 4096 visible ASCII characters is refused without being quoted', async (t) => {
  for (const value of ['short', 'has space inside', 'caf\u00e9-latte', 'x'.repeat(4097)]) {
    t.throws(() => secretForms('bad', value, 'PLACEHOLDER_BAD'), { name: 'TypeError', message: /secret "bad": a value must be 8 to 4096 visible ASCII characters$/ })
  }
})
