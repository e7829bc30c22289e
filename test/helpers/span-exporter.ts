import { trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import type { Test } from 'tap'

/** An in-memory tracing SDK installed as the global TracerProvider. */
export interface InstalledTracing {
  /** The spans ended so far, in the order they ended. */
  spans (): ReadableSpan[]
}

/**
 * Installs a TracerProvider that keeps every ended span in memory (the way an application
 * installs its SDK), removed again at teardown.
 */
export function installTracing (t: Test): InstalledTracing {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  if (!trace.setGlobalTracerProvider(provider)) throw new Error('a global TracerProvider is already installed')
  t.teardown(async () => {
    trace.disable()
    await provider.shutdown()
  })
  return { spans: () => exporter.getFinishedSpans() }
}
