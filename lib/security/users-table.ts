// A fixed users table as a credential check: names and passwords compared in constant time,
// credentials that passed remembered, and the whole `Proxy-Authorization` values that carried
// them remembered too, so that a client's later requests are admitted by one map lookup.

import { createHash, timingSafeEqual } from 'node:crypto'
import type { ForwardProxyCredentialCheck, ForwardProxyUser, ForwardProxyUserEntry } from '../../types/user'

/** Credentials that passed a users table, and what the table answered for them. */
interface PassedCredentials {
  readonly username: string
  readonly password: string
  /** `true` for a user without a policy; the user's entry (never handed out as is) otherwise. */
  readonly entry: true | ForwardProxyUser
}

/**
 * The `Proxy-Authorization` values whose credentials passed a users table. Filled only after
 * the header was parsed and its credentials checked in full; it goes with the table, so a
 * reconfiguration, which replaces the table, forgets it.
 */
export interface PassedAuthorizations {
  /** The credentials `authorization` (the whole header value) passed with, if it is remembered. */
  lookup: (authorization: string) => PassedCredentials | undefined
  /**
   * Remembers that `authorization` carried `username` and `password`, when they passed this
   * table; does nothing otherwise.
   */
  remember: (authorization: string, username: string, password: string) => void
}

// Where a users-table check keeps its remembered headers, kept off the public type.
const PASSED_AUTHORIZATIONS = Symbol('users table: authorizations that passed')

// Compared against when the user name is unknown, so an unknown name costs the same as a wrong password.
const ABSENT_PASSWORD = '\u0000fastify-forward-proxy-absent-user\u0000'

// One pair of credentials has many spellings of the header that decode to it (the scheme's
// case, base64 padding), so the headers remembered are bounded; past it they start again.
const MAX_REMEMBERED_AUTHORIZATIONS = 1024

/**
 * Builds a credential check from fixed users: name to password, or to an entry with the
 * password and the user's own policy (returned as the user, so `request.proxyUser` carries
 * it). Both the name lookup and the password comparison take the same time whether or not
 * the user exists. Credentials that passed once are remembered (by their exact text: a hit
 * reveals nothing the 200 does not), so a client's later requests cost a map lookup, not two
 * hashes; the table and what it remembers go with the check, which a reconfiguration replaces.
 * The check carries {@link PassedAuthorizations} (see {@link passedAuthorizationsOf}).
 */
export function credentialCheckFromUsers (users: Readonly<Record<string, string | ForwardProxyUserEntry>>): ForwardProxyCredentialCheck {
  const table = new Map<string, { digest: Buffer, user: true | ForwardProxyUser }>(Object.entries(users).map(([name, entry]) => {
    if (typeof entry === 'string') return [name, { digest: digestOf(entry), user: true }]
    const { password, ...policy } = entry
    return [name, { digest: digestOf(password), user: { ...policy, name } as ForwardProxyUser }]
  }))
  const absent = digestOf(ABSENT_PASSWORD)
  // Holds at most one entry per user: only credentials that passed are kept.
  const passed = new Map<string, true | ForwardProxyUser>()
  // The name's length first: no two pairs make the same key, whatever characters they hold.
  const keyOf = (username: string, password: string): string => `${username.length}:${username}${password}`
  const check: ForwardProxyCredentialCheck & { [PASSED_AUTHORIZATIONS]?: PassedAuthorizations } = (username, password) => {
    const key = keyOf(username, password)
    let user = passed.get(key)
    if (user === undefined) {
      const expected = table.get(username)
      const matches = timingSafeEqual(digestOf(password), expected?.digest ?? absent)
      if (!matches || expected === undefined) return false
      user = expected.user
      passed.set(key, user)
    }
    return userFromEntry(user)
  }
  const authorizations = new Map<string, PassedCredentials>()
  check[PASSED_AUTHORIZATIONS] = {
    lookup: (authorization) => authorizations.get(authorization),
    remember: (authorization, username, password) => {
      const entry = passed.get(keyOf(username, password))
      if (entry === undefined) return
      if (authorizations.size >= MAX_REMEMBERED_AUTHORIZATIONS) authorizations.clear()
      authorizations.set(authorization, { username, password, entry })
    }
  }
  return check
}

/** The remembered headers of `check` when it is a users table; undefined for any other check (an application's `validate`). */
export function passedAuthorizationsOf (check: ForwardProxyCredentialCheck): PassedAuthorizations | undefined {
  return (check as { [PASSED_AUTHORIZATIONS]?: PassedAuthorizations })[PASSED_AUTHORIZATIONS]
}

/**
 * What a check answers for a user's entry: `true`, or a copy of the user (an application hook
 * may change request.proxyUser's fields; the table's own stays as configured).
 */
export function userFromEntry (entry: true | ForwardProxyUser): true | ForwardProxyUser {
  return entry === true ? true : { ...entry }
}

function digestOf (text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}
