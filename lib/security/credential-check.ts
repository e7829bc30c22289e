import type { ForwardProxyCredentialCheck } from '../../types/user'
import { timingSafeEqualText } from './constant-time'

// Compared against when the user name is unknown, so an unknown name costs the same as a wrong password.
const ABSENT_PASSWORD = '\u0000fastify-forward-proxy-absent-user\u0000'

/**
 * Builds a credential check from a fixed user name to password map. Both the name lookup and
 * the password comparison take the same time whether or not the user exists.
 */
export function credentialCheckFromUsers (users: Readonly<Record<string, string>>): ForwardProxyCredentialCheck {
  const table = new Map(Object.entries(users))
  return (username, password) => {
    const expected = table.get(username)
    const matches = timingSafeEqualText(password, expected ?? ABSENT_PASSWORD)
    return matches && expected !== undefined
  }
}
