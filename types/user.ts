import type { FastifyRequest } from 'fastify'
import type { ForwardProxyPolicyMode } from './options'

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
  /**
   * Host patterns this user may reach, within the destination policy (which still applies):
   * others get 403 `http_request_denied`. Omitted: whatever the policy allows.
   */
  allowedHosts?: readonly string[]
  /**
   * Tunnels this user may have open at once (CONNECT, opaque or intercepted); beyond it 429
   * `connection_limit_reached`. Omitted: only the proxy's `limits.maxConcurrentTunnels`.
   */
  maxConcurrentTunnels?: number
  /**
   * Requests this user may make per minute (CONNECTs, `http://` requests, requests inside its
   * intercepted tunnels), counted in windows of 60 s from the first request of each; beyond
   * it 429 `http_request_denied` with `Retry-After`. Omitted: no limit.
   */
  requestsPerMinute?: number
  /**
   * `report` forwards a request or tunnel that this user's `allowedHosts` would refuse and logs
   * it as `would-deny` (`access.rule` `users.<name>.allowedHosts`), to try a list before
   * enforcing it; a placeholder in such a request is refused (403), never replaced. Its other
   * limits, the destination policy and secret grants are enforced as always (see
   * {@link ForwardProxyPolicyMode}). Omitted: `'enforce'`.
   */
  mode?: ForwardProxyPolicyMode
}

/**
 * One entry of the `users` option: the password, and optionally the user's own policy (the
 * fields of {@link ForwardProxyUser} but its name).
 */
export interface ForwardProxyUserEntry extends Omit<ForwardProxyUser, 'name'> {
  /** The password, compared in constant time. */
  password: string
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
