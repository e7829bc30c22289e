// What the tests of the HAR capture file share: a scratch folder, entries that are valid HAR
// entries numbered in `_seq`, and reading a file back as a HAR document checked against the
// HAR 1.2 schema.

import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

// har-validator ships no types: its promise API as these tests use it.
const harValidator = require('har-validator') as { har: (document: unknown) => Promise<unknown> }

/** The creator the tests' writers name. */
export const CREATOR = { name: 'capture-test', version: '1.2.3' } as const

/** A fresh folder under the system's temporary one, removed when `t` ends. */
export async function scratchFolder (t: Test): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'ffp-har-'))
  t.teardown(() => rm(folder, { recursive: true, force: true }))
  return folder
}

/** A HAR entry numbered `seq`, with `padding` characters of response body; serialized on one line. */
export function harEntry (seq: number, padding = 0): string {
  return JSON.stringify({
    startedDateTime: new Date(Date.UTC(2025, 0, 1, 0, 0, 0, seq % 1000)).toISOString(),
    time: 1,
    request: { method: 'GET', url: `http://example.com/${seq}`, httpVersion: 'HTTP/1.1', cookies: [], headers: [], queryString: [], headersSize: -1, bodySize: 0 },
    response: {
      status: 200,
      statusText: 'OK',
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: [],
      content: { size: padding, mimeType: 'text/plain', text: 'é'.repeat(padding) },
      redirectURL: '',
      headersSize: -1,
      bodySize: padding
    },
    cache: {},
    timings: { send: 0, wait: 1, receive: 0 },
    _seq: seq
  })
}

/** What a capture file holds, once it parsed as JSON and passed the HAR 1.2 schema. */
export interface HarDocument {
  readonly log: {
    readonly version: string
    readonly creator: { readonly name: string, readonly version: string }
    readonly entries: ReadonlyArray<{ readonly _seq: number }>
  }
}

/** The file at `path` as a HAR document; rejects when it is not JSON or breaks the HAR schema. */
export async function readHar (path: string): Promise<HarDocument> {
  const document: unknown = JSON.parse(await readFile(path, 'utf8'))
  await harValidator.har(document)
  return document as HarDocument
}

/** The `_seq` of each entry of the file at `path`, which must be a valid HAR document. */
export async function sequenceOf (path: string): Promise<number[]> {
  return (await readHar(path)).log.entries.map((entry) => entry._seq)
}

/** `count` consecutive numbers from `from`. */
export function range (from: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => from + i)
}
