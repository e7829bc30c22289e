// The limits a `workers` server shares without Redis, in a worker: the LimitStore whose counts
// the first process keeps (workers-limits.ts), asked over the cluster channel.

import type { AuthFailureCount, LimitStore } from '../security/limit-store'
import { type RateStoreLink, type RateTaken, ReservedRateCounter } from '../security/reserved-rate-counter'
import {
  type Answer, ANSWERS, type AnswersMessage, type Call, CALLS, type CallsMessage, FAILURES, type FailuresMessage, SURRENDER,
  type SurrenderMessage, SURRENDERED, type SurrenderedMessage, type TakenEntry
} from './workers-limits-protocol'

// How long a worker waits for the first process before counting in its own process.
const ANSWER_TIMEOUT_MS = 1_000

interface PendingCall {
  readonly resolve: (answer: Answer) => void
  readonly reject: (error: Error) => void
}

/**
 * In a worker: the {@link LimitStore} whose counts the first process keeps. The calls of one
 * turn of the event loop leave in one message, under one timer. Rate places are taken ahead
 * while plenty of a window is left (see reserved-rate-counter.ts), so that most requests are
 * counted without a message; the first process asks for the unused ones when another worker
 * runs out.
 */
export function workersLimitStore (): LimitStore {
  let nextId = 1
  let queued: Call[] = []
  const pending = new Map<number, PendingCall>()
  let failuresListener: ((client: string, count: AuthFailureCount) => void) | null = null
  let availabilityListener: ((available: boolean, reason?: Error) => void) | null = null

  const settle = (id: number, answer: Answer | Error): void => {
    const call = pending.get(id)
    if (call === undefined) return
    pending.delete(id)
    if (answer instanceof Error) call.reject(answer)
    else call.resolve(answer)
  }
  const settleAll = (calls: readonly Call[], error: Error): void => {
    for (const call of calls) if (call[0] !== 'release' && call[0] !== 'giveBack') settle(call[1], error)
  }
  const flush = (): void => {
    const calls = queued
    queued = []
    if (calls.length === 0) return
    if (process.send === undefined || !process.connected) {
      settleAll(calls, new Error('the first process cannot be reached'))
      return
    }
    process.send({ type: CALLS, calls } satisfies CallsMessage)
    // Answered calls are settled already: only the unanswered ones are failed.
    setTimeout(() => settleAll(calls, new Error(`the first process did not answer within ${ANSWER_TIMEOUT_MS} ms`)), ANSWER_TIMEOUT_MS).unref()
  }
  const enqueue = (call: Call): void => {
    if (queued.length === 0) setImmediate(flush)
    queued.push(call)
  }
  const ask = <T extends Answer>(build: (id: number) => Call): Promise<T> => new Promise((resolve, reject) => {
    const id = nextId++
    pending.set(id, { resolve: resolve as PendingCall['resolve'], reject })
    enqueue(build(id))
  })

  const link: RateStoreLink = {
    async take (takes) {
      const entries = takes.map(({ key, needed, limit, windowMs, givenBack }) => [key, needed, limit, windowMs, givenBack?.units ?? 0, givenBack?.window ?? ''] as const)
      const answers = await ask<readonly TakenEntry[]>((id) => ['take', id, entries])
      // The first process asked the other holders itself before answering.
      return answers.map(([taken, msLeft, window]): RateTaken => ({ taken, msLeft, window, holders: 0 }))
    },
    askForReserves: async () => {},
    async giveBack (key, window, units) {
      enqueue(['giveBack', key, window, units])
    }
  }
  const rates = new ReservedRateCounter(link)

  const onMessage = (message: AnswersMessage | FailuresMessage | SurrenderMessage): void => {
    if (message?.type === ANSWERS) {
      for (const [id, answer] of message.answers) settle(id, answer)
    } else if (message?.type === FAILURES) {
      failuresListener?.(message.client, message.count)
    } else if (message?.type === SURRENDER && process.send !== undefined && process.connected) {
      const units = rates.surrender(message.key, message.window) ?? 0
      process.send({ type: SURRENDERED, id: message.id, units } satisfies SurrenderedMessage)
    }
  }
  const onDisconnect = (): void => availabilityListener?.(false, new Error('the channel to the first process closed'))
  process.on('message', onMessage)
  process.once('disconnect', onDisconnect)

  return {
    label: 'the first process of the workers',
    countRequest: (key, limit, windowMs) => rates.count(key, limit, windowMs),
    async acquireSlot (key, limit) {
      const taken = await ask<boolean>((id) => ['slot', id, key, limit])
      if (!taken) return null
      let released = false
      return () => {
        if (released) return
        released = true
        enqueue(['release', key])
      }
    },
    recordAuthFailure: (client, windowMs) => ask<AuthFailureCount>((id) => ['failure', id, client, windowMs]),
    onAuthFailures (listener) { failuresListener = listener },
    onAvailability (listener) { availabilityListener = listener },
    async close () {
      // Unused rate places go back now; the first process gives back this worker's slots when it exits.
      rates.giveBackAll()
      flush()
      process.removeListener('message', onMessage)
      process.removeListener('disconnect', onDisconnect)
    }
  }
}
