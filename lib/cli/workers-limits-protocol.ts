// The messages of the limits a `workers` server shares over Node's cluster channel: the calls a
// worker makes to the first process, its answers, and what the first process tells workers.

import type { AuthFailureCount } from '../security/limit-store'

/** Type of a worker's calls, one message per turn of its event loop (other types share the channel). */
export const CALLS = 'forward-proxy:limits'
/** Type of the first process's answers to calls. */
export const ANSWERS = 'forward-proxy:limits-answers'
/** Type of a failed authentication the first process tells every worker of. */
export const FAILURES = 'forward-proxy:auth-failures'
/** Type of the first process asking a worker for the rate places it took ahead of one window. */
export const SURRENDER = 'forward-proxy:limits-surrender'
/** Type of a worker's answer to {@link SURRENDER}: the places it had not used. */
export const SURRENDERED = 'forward-proxy:limits-surrendered'

/** One key of a `take` call: key, requests, limit, window ms, places given back and their window. */
export type TakeEntry = readonly [string, number, number, number, number, string]
/** The answer to one {@link TakeEntry}: places taken, ms left in the window, the window. */
export type TakenEntry = readonly [number, number, string]

/**
 * One call of a worker: `['take', id, entries]` (rate places for a batch), `['giveBack', key,
 * window, units]`, `['slot', id, key, limit]`, `['release', key]` or `['failure', id, client,
 * windowMs]`. `giveBack` and `release` get no answer.
 */
export type Call =
  | readonly ['take', number, readonly TakeEntry[]]
  | readonly ['giveBack', string, string, number]
  | readonly ['slot', number, string, number]
  | readonly ['release', string]
  | readonly ['failure', number, string, number]

/** What a call is answered with. */
export type Answer = readonly TakenEntry[] | boolean | AuthFailureCount

/** A worker's calls of one turn. */
export interface CallsMessage { readonly type: typeof CALLS, readonly calls: readonly Call[] }
/** Answers to calls, by call id. */
export interface AnswersMessage { readonly type: typeof ANSWERS, readonly answers: ReadonlyArray<readonly [number, Answer]> }
/** A failed authentication counted for all workers. */
export interface FailuresMessage { readonly type: typeof FAILURES, readonly client: string, readonly count: AuthFailureCount }
/** A request for a worker's unused rate places of `key`'s `window`. */
export interface SurrenderMessage { readonly type: typeof SURRENDER, readonly id: number, readonly key: string, readonly window: string }
/** The places a worker gave back for the request `id` (0: none left). */
export interface SurrenderedMessage { readonly type: typeof SURRENDERED, readonly id: number, readonly units: number }
