import type { EstConfig } from './config'

/** Where the leaves come from, for the start-up summary: the EST endpoint, never a credential. */
export function estEndpoint (est: EstConfig): string {
  return `${new URL(est.url).origin}/.well-known/est${est.label === undefined ? '' : `/${est.label}`}`
}
