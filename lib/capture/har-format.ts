// The layout of a capture file, shared by its writer and its repair: a HAR 1.2 document whose
// head is one line, each entry one line, and whose tail closes the entries array, so that the
// document stays whole when entries are written over its tail and a cut file can be mended line
// by line.

/** Who wrote a capture file: HAR's `log.creator`. */
export interface HarCreator {
  readonly name: string
  readonly version: string
}

/** What closes the document after the last entry (and after the head's line when there is none). */
export const HAR_TAIL = '\n]}}\n'

/** Between two entries: the comma ends the line of the entry before. */
export const ENTRY_SEPARATOR = ',\n'

/** The first line of a capture file, up to the opening of `log.entries`, without its line feed. */
export function harHead (creator: HarCreator): string {
  const written = JSON.stringify({ name: creator.name, version: creator.version })
  return `{"log":{"version":"1.2","creator":${written},"pages":[],"entries":[`
}

/** A capture file holding no entry: the head, its line feed, the tail. */
export function emptyHar (creator: HarCreator): string {
  return `${harHead(creator)}\n${HAR_TAIL}`
}
