// har-validator ships no types: the one call the tests make, typed.
import { createRequire } from 'node:module'

const load = createRequire(__filename)

/** har-validator's promise API: resolves when `document` is a valid HAR 1.2 log, rejects with the schema errors otherwise. */
const validator = load('har-validator') as { har: (document: unknown) => Promise<unknown> }

/** The schema errors har-validator finds in `document`; empty when it accepts it. */
export async function harValidationErrors (document: unknown): Promise<unknown[]> {
  try {
    await validator.har(document)
    return []
  } catch (error) {
    const { errors } = error as { errors?: unknown[] }
    return errors ?? [error]
  }
}
