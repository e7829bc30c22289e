import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

/**
 * A data directory that does not exist yet (`<temp>/state/forward-proxy`), so the server must
 * create it; the temporary folder is removed at teardown.
 */
export function freshDataDirectory (t: Test): string {
  const root = mkdtempSync(join(tmpdir(), 'development-ca-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  return join(root, 'state', 'forward-proxy')
}

/** The base64 body of a PEM block (the lines between BEGIN and END, joined), for absence checks. */
export function pemBody (pem: string | Buffer): string {
  return String(pem).replace(/-----(BEGIN|END) [A-Z ]+-----/g, '').replace(/\s+/g, '')
}
