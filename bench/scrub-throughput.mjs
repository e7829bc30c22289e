// Throughput of the response-body secret scrubber (lib/security/secret-scrubber.ts), in process,
// no sockets: SCRUB_MIB MiB (default 64) of JSON lines full of base64 strings, URLs, escapes and
// entities, pushed in 64 KiB chunks through one stream scrubber, with 1 and with 5 secrets; then
// SCRUB_BODIES (default 10,000) bodies of 200 bytes, one stream scrubber each. The text holds no
// secret, so every byte is scanned and nothing replaced: the cost every response pays.
// Prints MiB/s (median and best of SCRUB_ROUNDS rounds after one warm-up, default 5) and, for the
// small bodies, µs a body. The best round is the one least disturbed by other processes.
// Run: npm run build && node bench/scrub-throughput.mjs
import { createHash } from 'node:crypto'
import { createSecretScrubber } from '../dist/lib/security/secret-scrubber.js'

const MiB = 1024 * 1024
const totalMiB = Number(process.env.SCRUB_MIB ?? 64)
const bodies = Number(process.env.SCRUB_BODIES ?? 10_000)
const rounds = Number(process.env.SCRUB_ROUNDS ?? 5)
const CHUNK = 64 * 1024
const BODY = 200

/** Deterministic pseudo-random bytes: SHA-256 in counter mode. */
function pseudoRandom (length, seed) {
  const out = Buffer.alloc(length)
  for (let offset = 0, counter = 0; offset < length; offset += 32, counter++) {
    createHash('sha256').update(`${seed}:${counter}`).digest().copy(out, offset)
  }
  return out
}

/** JSON lines like an API's: base64 payloads, escaped URLs, percent-encoding, entities. */
function sampleText (bytes) {
  const random = pseudoRandom(bytes, 'text')
  const lines = []
  let size = 0
  for (let index = 0, offset = 0; size < bytes; index++) {
    const take = 48 + (index % 7) * 40
    const blob = random.subarray(offset % (random.length - take), offset % (random.length - take) + take)
    offset += take
    const line = JSON.stringify({
      id: index,
      name: `item-${index}`,
      data: blob.toString('base64'),
      token: blob.subarray(0, 24).toString('base64url'),
      url: `https://example.com/a/b?q=${encodeURIComponent(blob.subarray(0, 12).toString('latin1'))}&n=${index}`,
      html: '<p class="x">Tom &amp; Jerry &#x27;quoted&#x27; \u00e9t\u00e9</p>'
    }).replace(/\//g, '\\/') + '\n'
    lines.push(line)
    size += line.length
  }
  return Buffer.from(lines.join(''), 'latin1').subarray(0, bytes)
}

function secrets (count) {
  return Array.from({ length: count }, (_, index) => ({
    name: `secret-${index}`,
    value: `sk-live_${pseudoRandom(24, `value-${index}`).toString('base64url')}/+${index}!`,
    placeholder: `PLACEHOLDER_${index}_0123456789`
  }))
}

function median (values) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

/** Median and best MiB/s; for small bodies, also the µs a body each stands for. */
function summary (mibPerSecond, bodyBytes) {
  const perBody = (rate) => bodyBytes === undefined ? '' : `, ${(bodyBytes / (rate * MiB) * 1e6).toFixed(2)} µs a body`
  const middle = median(mibPerSecond)
  const best = Math.max(...mibPerSecond)
  return `${middle.toFixed(0)} MiB/s${perBody(middle)} (best round ${best.toFixed(0)} MiB/s${perBody(best)})`
}

function streamRound (scrubber, text) {
  const found = new Set()
  const stream = scrubber.chunkScrubber(found)
  let out = 0
  const start = process.hrtime.bigint()
  for (let offset = 0; offset < text.length; offset += CHUNK) out += stream.push(text.subarray(offset, offset + CHUNK)).length
  out += stream.end().length
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  if (out !== text.length || found.size !== 0) throw new Error('the sample text was changed: it must hold no secret')
  return text.length / MiB / seconds
}

function bodiesRound (scrubber, samples) {
  const start = process.hrtime.bigint()
  let out = 0
  for (const body of samples) {
    const found = new Set()
    const stream = scrubber.chunkScrubber(found)
    out += stream.push(body).length
    out += stream.end().length
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  if (out !== samples.length * BODY) throw new Error('a sample body was changed: it must hold no secret')
  return samples.length * BODY / MiB / seconds
}

const text = sampleText(totalMiB * MiB)
const samples = Array.from({ length: bodies }, (_, index) => Buffer.from(text.subarray(index * BODY, (index + 1) * BODY)))
console.log(`node ${process.version}; ${totalMiB} MiB in ${CHUNK / 1024} KiB chunks; ${bodies} bodies of ${BODY} bytes; median of ${rounds} rounds after a warm-up`)
for (const count of [1, 5]) {
  const started = process.hrtime.bigint()
  const scrubber = createSecretScrubber(secrets(count))
  const buildMicros = Number(process.hrtime.bigint() - started) / 1e3
  const streamed = []
  const small = []
  for (let round = 0; round <= rounds; round++) {
    const stream = streamRound(scrubber, text)
    const body = bodiesRound(scrubber, samples)
    if (round === 0) continue
    streamed.push(stream)
    small.push(body)
  }
  console.log(`${count} secret(s): built in ${buildMicros.toFixed(0)} µs, holds back at most ${scrubber.maxHoldBack} bytes`)
  console.log(`  ${totalMiB} MiB stream: ${summary(streamed)}`)
  console.log(`  ${bodies} bodies of ${BODY} bytes: ${summary(small, BODY)}`)
}
