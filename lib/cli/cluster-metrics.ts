// The metrics of a `workers` server summed over its workers, gathered over the cluster's IPC channel.

import cluster, { type Worker } from 'node:cluster'
import type { Attributes, HrTime } from '@opentelemetry/api'
import type { Histogram, MetricData, ScopeMetrics } from '@opentelemetry/sdk-metrics'

// Only types come from the SDK: the first process loads this file whether or not the
// configuration has `metrics`, and must not load the SDK for it (see cli-lazy-modules).

/** How long the first process waits for each worker's collected metrics (ms). */
export const WORKER_COLLECT_TIMEOUT = 1_000

/** How long a scraped worker waits for the first process's answer (ms), beyond the workers' wait. */
const GATHER_MARGIN = 1_000

/**
 * What one worker sends when asked to collect: its collected scopes, as JSON over the cluster's
 * IPC channel (histograms without `min` and `max`, which the Prometheus format has no place for).
 */
export type WorkerMetrics = ScopeMetrics[]

/** The metrics of every worker that answered in time, summed, and how many workers that was. */
export interface ClusterCollection {
  /** The sum over the workers that answered, by metric name and attribute set. */
  readonly scopeMetrics: ScopeMetrics[]
  /** Worker processes running when the scrape was gathered. */
  readonly workers: number
  /** Workers whose metrics are in {@link ClusterCollection.scopeMetrics}. */
  readonly reporting: number
}

/** A worker's part: answers the first process's collection requests and gathers for a scrape. */
export interface ClusterMetricsWorker {
  /** Tells the first process that this worker answers from now on (once its endpoint listens). */
  announce (): void
  /** Every answering worker's metrics, summed; rejects when the first process does not answer. */
  collect (): Promise<ClusterCollection>
  /** Stops answering; a collection still waiting rejects. */
  close (): void
}

// The messages, all namespaced: other `forward-proxy:*` messages share the channel.
const READY = 'forward-proxy:metrics-ready'
const SCRAPE = 'forward-proxy:metrics-scrape'
const COLLECT = 'forward-proxy:metrics-collect'
const COLLECTED = 'forward-proxy:metrics-collected'
const GATHERED = 'forward-proxy:metrics-gathered'

type MetricsMessage =
  | { readonly type: typeof READY }
  | { readonly type: typeof SCRAPE, readonly id: number }
  | { readonly type: typeof COLLECT, readonly id: number }
  | { readonly type: typeof COLLECTED, readonly id: number, readonly metrics: WorkerMetrics | null }
  | { readonly type: typeof GATHERED, readonly id: number, readonly workers: number, readonly collected: WorkerMetrics[] }

const MESSAGE_TYPES: ReadonlySet<string> = new Set([READY, SCRAPE, COLLECT, COLLECTED, GATHERED])

/** The message when it is one of this file's, else undefined (another message on the channel). */
function metricsMessage (message: unknown): MetricsMessage | undefined {
  if (typeof message !== 'object' || message === null) return undefined
  const { type } = message as { type?: unknown }
  return typeof type === 'string' && MESSAGE_TYPES.has(type) ? message as MetricsMessage : undefined
}

/**
 * In the first process of a `workers` server: answers a worker's scrape request with the
 * collected metrics of every worker that announced it answers, gathered within `timeout` ms
 * each. A worker that does not answer in time, or exits meanwhile, is left out (the count of
 * those that answered goes back with the metrics). Other messages are ignored.
 */
export function relayMetricsCollection (timeout = WORKER_COLLECT_TIMEOUT): void {
  const answering = new Set<Worker>()
  const requests = new CollectRequests(timeout)
  const relay = async (requester: Worker, id: number): Promise<void> => {
    const collected = await requests.ask([...answering].filter((worker) => worker.isConnected()))
    if (!requester.isConnected()) return
    const gathered: MetricsMessage = { type: GATHERED, id, workers: runningWorkers(), collected }
    requester.send(gathered, () => {})
  }
  cluster.on('message', (worker: Worker, raw: unknown) => {
    const message = metricsMessage(raw)
    if (message?.type === READY) answering.add(worker)
    else if (message?.type === SCRAPE) void relay(worker, message.id)
    else if (message?.type === COLLECTED) requests.answer(message.id, worker, message.metrics)
  })
  cluster.on('exit', (worker: Worker) => {
    answering.delete(worker)
    requests.gone(worker)
  })
}

/** The first process's collection requests to its workers, each waiting for its answers. */
class CollectRequests {
  private lastId = 0
  private readonly waiting = new Map<number, (worker: Worker, metrics: WorkerMetrics | null) => void>()

  constructor (private readonly timeout: number) {}

  /** Asks `workers` to collect; resolves with the answers once all came, or at the timeout. */
  ask (workers: readonly Worker[]): Promise<WorkerMetrics[]> {
    const id = ++this.lastId
    return new Promise((resolve) => {
      const answers: WorkerMetrics[] = []
      const pending = new Set(workers)
      const finish = (): void => { clearTimeout(timer); this.waiting.delete(id); resolve(answers) }
      const timer = setTimeout(finish, this.timeout)
      this.waiting.set(id, (worker, metrics) => {
        if (!pending.delete(worker)) return
        if (metrics !== null) answers.push(metrics)
        if (pending.size === 0) finish()
      })
      if (pending.size === 0) finish()
      const collect: MetricsMessage = { type: COLLECT, id }
      for (const worker of workers) worker.send(collect, (error: Error | null) => { if (error !== null) this.answer(id, worker, null) })
    })
  }

  /** A worker's answer to request `id` (null: it could not collect). */
  answer (id: number, worker: Worker, metrics: WorkerMetrics | null): void {
    this.waiting.get(id)?.(worker, metrics)
  }

  /** A worker exited: no request waits for it any longer. */
  gone (worker: Worker): void {
    for (const answer of [...this.waiting.values()]) answer(worker, null)
  }
}

/** Worker processes running now (in the first process). */
function runningWorkers (): number {
  return Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined && !worker.isDead()).length
}

/**
 * In a worker: answers the first process's collection requests with `collectHere` (this
 * worker's collected metrics), and gathers every worker's for a scrape. Installs its message
 * listener at once; {@link ClusterMetricsWorker.announce} tells the first process to ask it.
 */
export function joinClusterMetrics (collectHere: () => Promise<ScopeMetrics[]>, timeout = WORKER_COLLECT_TIMEOUT): ClusterMetricsWorker {
  const gathering = new Map<number, { resolve: (collection: ClusterCollection) => void, reject: (error: Error) => void }>()
  let lastId = 0
  const answer = (id: number): void => {
    collectHere().then((scopes) => withoutMinMax(scopes), () => null).then((metrics) => {
      sendToFirstProcess({ type: COLLECTED, id, metrics })
    }, () => {})
  }
  const onMessage = (raw: unknown): void => {
    const message = metricsMessage(raw)
    if (message?.type === COLLECT) {
      answer(message.id)
    } else if (message?.type === GATHERED) {
      gathering.get(message.id)?.resolve({ scopeMetrics: mergeWorkerMetrics(message.collected), workers: message.workers, reporting: message.collected.length })
    }
  }
  process.on('message', onMessage)
  return {
    announce () {
      sendToFirstProcess({ type: READY })
    },
    collect () {
      const id = ++lastId
      return new Promise<ClusterCollection>((resolve, reject) => {
        const done = (): void => { clearTimeout(timer); gathering.delete(id) }
        const timer = setTimeout(() => { done(); reject(new Error('the first process did not answer')) }, timeout + GATHER_MARGIN)
        gathering.set(id, {
          resolve: (collection) => { done(); resolve(collection) },
          reject: (error) => { done(); reject(error) }
        })
        sendToFirstProcess({ type: SCRAPE, id }, (error) => gathering.get(id)?.reject(error))
      })
    },
    close () {
      process.removeListener('message', onMessage)
      for (const pending of [...gathering.values()]) pending.reject(new Error('the metrics endpoint closed'))
    }
  }
}

/** In a worker: sends `message` to the first process; `failed` is called when it cannot. */
function sendToFirstProcess (message: MetricsMessage, failed: (error: Error) => void = () => {}): void {
  if (!process.connected || process.send === undefined) {
    failed(new Error('no channel to the first process'))
    return
  }
  process.send(message, undefined, {}, (error: Error | null) => { if (error !== null) failed(error) })
}

/**
 * Sums the metrics of several workers: a metric is matched by scope and name, a data point by
 * its attribute set (in any key order). Counters and gauges (up-down counters, gauges) add up;
 * explicit-bucket histograms add bucket by bucket, with their sums and counts, when their
 * boundaries are the same. Where two points cannot be added (different boundaries, different
 * point types under one name, exponential histograms) the first worker's is kept. A point's
 * start is the earliest and its end the latest of the workers'. The inputs are not changed.
 */
export function mergeWorkerMetrics (workers: readonly WorkerMetrics[]): ScopeMetrics[] {
  const scopes = new Map<string, { scope: ScopeMetrics['scope'], metrics: Map<string, MergedMetric> }>()
  for (const scopeMetrics of workers.flat()) {
    const { scope } = scopeMetrics
    const scopeKey = JSON.stringify([scope.name, scope.version ?? '', scope.schemaUrl ?? ''])
    let merged = scopes.get(scopeKey)
    if (merged === undefined) scopes.set(scopeKey, merged = { scope, metrics: new Map() })
    for (const metric of scopeMetrics.metrics) {
      const existing = merged.metrics.get(metric.descriptor.name)
      if (existing === undefined) merged.metrics.set(metric.descriptor.name, { metric, points: pointsByAttributes(metric) })
      else if (existing.metric.dataPointType === metric.dataPointType) addPoints(existing.points, metric)
    }
  }
  return [...scopes.values()].map(({ scope, metrics }) => ({
    scope,
    metrics: [...metrics.values()].map(({ metric, points }) => withPoints(metric, [...points.values()]))
  }))
}

/** Any point of a metric: a number (sums, gauges) or a histogram of either kind. */
type AnyPoint = MetricData['dataPoints'][number]

interface MergedMetric {
  /** The first worker's metric: its descriptor and type are kept. */
  readonly metric: MetricData
  /** The summed points, by attribute set. */
  readonly points: Map<string, AnyPoint>
}

function pointsByAttributes (metric: MetricData): Map<string, AnyPoint> {
  const points = new Map<string, AnyPoint>()
  addPoints(points, metric)
  return points
}

function addPoints (points: Map<string, AnyPoint>, metric: MetricData): void {
  for (const point of metric.dataPoints as readonly AnyPoint[]) {
    const key = attributesKey(point.attributes)
    const existing = points.get(key)
    points.set(key, existing === undefined ? point : addPoint(existing, point))
  }
}

function addPoint (a: AnyPoint, b: AnyPoint): AnyPoint {
  const times = { startTime: earlier(a.startTime, b.startTime), endTime: later(a.endTime, b.endTime) }
  if (typeof a.value === 'number' && typeof b.value === 'number') return { ...a, ...times, value: a.value + b.value }
  if (isHistogram(a.value) && isHistogram(b.value) && sameNumbers(a.value.buckets.boundaries, b.value.buckets.boundaries)) {
    return { ...a, ...times, value: addHistograms(a.value, b.value) }
  }
  return a
}

function addHistograms (a: Histogram, b: Histogram): Histogram {
  return {
    buckets: { boundaries: a.buckets.boundaries, counts: a.buckets.counts.map((count, index) => count + (b.buckets.counts[index] ?? 0)) },
    sum: (a.sum ?? 0) + (b.sum ?? 0),
    count: a.count + b.count
  }
}

function isHistogram (value: AnyPoint['value']): value is Histogram {
  return typeof value === 'object' && 'buckets' in value && Array.isArray(value.buckets.boundaries)
}

function sameNumbers (a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index])
}

function earlier (a: HrTime, b: HrTime): HrTime {
  return a[0] < b[0] || (a[0] === b[0] && a[1] <= b[1]) ? a : b
}

function later (a: HrTime, b: HrTime): HrTime {
  return earlier(a, b) === a ? b : a
}

/** The attribute set as a key independent of the order of its keys. */
function attributesKey (attributes: Attributes): string {
  return JSON.stringify(Object.keys(attributes).sort().map((key) => [key, attributes[key]]))
}

/** Histograms without `min` and `max`: JSON would turn an infinite one into null. */
function withoutMinMax (scopes: ScopeMetrics[]): WorkerMetrics {
  return scopes.map(({ scope, metrics }) => ({
    scope,
    metrics: metrics.map((metric) => withPoints(metric, (metric.dataPoints as readonly AnyPoint[]).map((point) =>
      isHistogram(point.value) ? { ...point, value: { buckets: point.value.buckets, sum: point.value.sum, count: point.value.count } } : point)))
  }))
}

/**
 * `metric` with other points. The points come from metrics of the same data point type (the
 * same value shape), which the type system cannot follow through the union.
 */
function withPoints (metric: MetricData, points: AnyPoint[]): MetricData {
  return { ...metric, dataPoints: points } as MetricData
}

/**
 * Prometheus text for the two gauges of a summed scrape: `forward_proxy_metrics_workers` (worker
 * processes running) and `forward_proxy_metrics_workers_reporting` (those whose metrics the
 * scrape sums; fewer when a worker did not answer in time or was starting).
 */
export function workersText (collection: Pick<ClusterCollection, 'workers' | 'reporting'>): string {
  return [
    '# HELP forward_proxy_metrics_workers Worker processes of the server when this scrape was gathered.',
    '# TYPE forward_proxy_metrics_workers gauge',
    `forward_proxy_metrics_workers ${collection.workers}`,
    '# HELP forward_proxy_metrics_workers_reporting Worker processes whose metrics this scrape sums (the others did not answer in time).',
    '# TYPE forward_proxy_metrics_workers_reporting gauge',
    `forward_proxy_metrics_workers_reporting ${collection.reporting}`,
    ''
  ].join('\n')
}
