import type { FastifyRequest } from 'fastify'

/**
 * The authenticated proxy user: the one who sent valid `Proxy-Authorization` credentials.
 * Augment this interface (declaration merging) to carry tenant or role data returned by your
 * credential check.
 */
export interface ForwardProxyUser {
  /** The user name from the Basic credentials. */
  name: string
  /**
   * The only secrets (by name, see the `secrets` option) whose placeholders this user's
   * requests may carry; a placeholder of any other is refused with 403. Omitted: every secret.
   */
  secrets?: readonly string[]
}

/**
 * Checks one pair of Basic credentials. Return `true` (or a {@link ForwardProxyUser} carrying
 * extra data) to accept them, `false` to answer 407. Throwing also answers 407 and logs the
 * error without the password. Compare secrets in constant time (see `timingSafeEqualText`).
 */
export type ForwardProxyCredentialCheck = (
  username: string,
  password: string,
  request: FastifyRequest
) => boolean | ForwardProxyUser | Promise<boolean | ForwardProxyUser>
