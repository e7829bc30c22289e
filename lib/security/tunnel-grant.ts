// Who may use an open tunnel: the user its CONNECT was admitted as, checked again after each
// reconfiguration, so that removing a user, changing its password or narrowing its policy applies
// to the requests of tunnels already open, not only to new ones.

import type { ForwardProxyUser } from '../../types/user'

/**
 * Checks the tunnel's credentials again against the users or `validate` in force now: the user
 * to use from now on, or false when they no longer pass.
 */
export type UserRecheck = () => Promise<ForwardProxyUser | false>

/** The user of one open tunnel and the configuration it was last checked under. */
export class TunnelGrant {
  #user: ForwardProxyUser | null
  #checkedUnder: object
  #pending: { readonly under: object, readonly verdict: Promise<boolean> } | null = null
  #revoked = false
  readonly #recheck: UserRecheck | null

  /**
   * @param user The user the CONNECT was admitted as (null without authentication).
   * @param settings The configuration it was admitted under (compared by identity).
   * @param recheck How to check it again; null when there is nothing to check (no authentication).
   */
  constructor (user: ForwardProxyUser | null, settings: object, recheck: UserRecheck | null) {
    this.#user = user
    this.#checkedUnder = settings
    this.#recheck = recheck
  }

  /** The user in force for the tunnel's requests. */
  get user (): ForwardProxyUser | null {
    return this.#user
  }

  /** True once a check found the user no longer admitted: the tunnel carries nothing more. */
  get revoked (): boolean {
    return this.#revoked
  }

  /**
   * True when the tunnel's user is still admitted under `settings`. Answers at once while
   * `settings` are the ones it was checked under; after a reconfiguration, checks once (every
   * caller waiting for the same check) and keeps the new user's fields. A check that throws
   * revokes: a credential store that cannot answer admits no one.
   */
  stillGranted (settings: object): boolean | Promise<boolean> {
    if (this.#revoked) return false
    if (settings === this.#checkedUnder || this.#recheck === null) {
      this.#checkedUnder = settings
      return true
    }
    if (this.#pending?.under !== settings) {
      const recheck = this.#recheck
      const verdict = recheck().then((user) => user, () => false as const).then((user) => {
        if (user === false) this.#revoked = true
        else if (!this.#revoked) {
          this.#user = user
          this.#checkedUnder = settings
        }
        return !this.#revoked
      })
      this.#pending = { under: settings, verdict }
    }
    return this.#pending.verdict
  }
}
