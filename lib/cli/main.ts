#!/usr/bin/env node
// The `forward-proxy` command: reads the configuration, starts the server (or its workers) and
// prints the start-up summary.

import { DEFAULT_LISTENER } from './config'
import { ConfigError } from './config-errors'
import { configFromCommandLine, parseCommandLine, startupSummary } from './command-line'
import { repairHarFile, type HarRepairResult } from '../capture/har-repair'
import { startProxyServer } from './build-server'
import { isWorker, reportWorkerReady, runWorkers, startedConfiguration } from './workers'
import { serveWorkersLimits } from './workers-limits'
import { answerReloadWithoutFile, restartNeededMessage, splitRestartKeys, watchConfiguration } from './reload'
import { idleMemoryPlan, releaseMemoryWhenIdle } from './idle-memory'

const USAGE = `Usage: forward-proxy [--config <file>] [--host <address>] [--port <n>]
       forward-proxy har-repair FILE

Runs fastify-forward-proxy. Without a configuration file: an HTTP/1.1 proxy on
${DEFAULT_LISTENER.host}:${DEFAULT_LISTENER.port}, no authentication, strict destination policy.

  --config <file>    JSON configuration file (also: FORWARD_PROXY_CONFIG=<file>)
  --host <address>   bind the first listener to this address instead (a non-loopback
                     address needs "users" or "allowAnonymous": true in the file)
  --port <n>         bind the first listener to this port instead (0: any free port)
  --help             this text

  har-repair FILE    make the HAR capture file FILE valid again after a crash: keeps
                     every whole entry, drops an unfinished one (a valid file is left as is)

Reference: docs/configuration.md`

async function main (): Promise<void> {
  const commandLine = parseCommandLine(process.argv.slice(2))
  if (commandLine.help) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (commandLine.harRepair !== undefined) {
    await runHarRepair(commandLine.harRepair)
    return
  }
  const fileConfig = configFromCommandLine(commandLine)
  const workers = fileConfig.workers ?? 1
  if (workers > 1 && !isWorker()) {
    // Without redis the workers count users' limits and the lockout here, for all of them.
    if (fileConfig.redis === undefined) serveWorkersLimits()
    await runWorkers(workers, fileConfig)
    return
  }
  // A worker serves what its first process started with where a change needs a restart, as a
  // reload would apply the file now: a replacement started after an edit matches the others.
  const { effective: config, restartNeeded } = isWorker()
    ? splitRestartKeys(await startedConfiguration(), fileConfig)
    : { effective: fileConfig, restartNeeded: [] }
  const server = await startProxyServer(config)
  for (const key of restartNeeded) server.app.log.warn({ reload: { key } }, restartNeededMessage(key))
  const stopReleasingMemory = releaseMemoryWhenIdle(server.app.log, idleMemoryPlan(config.releaseIdleMemory))
  const { configPath } = commandLine
  const stopWatching = configPath === undefined
    ? answerReloadWithoutFile(server.app.log)
    : watchConfiguration({ path: configPath, read: () => configFromCommandLine(commandLine) }, server.reload, server.app.log)

  let closing = false
  const shutdown = (signal: NodeJS.Signals): void => {
    // A worker is asked by its first process and may also get the terminal's SIGINT: close once.
    if (closing) return
    closing = true
    // A second signal while closing gets Node's default behaviour: the process ends at once.
    process.removeListener('SIGINT', shutdown)
    process.removeListener('SIGTERM', shutdown)
    stopWatching()
    // Left without a listener, SIGHUP (a log rotation, a reload hook) would end the process at
    // once, cutting the requests it is letting finish.
    process.on('SIGHUP', () => server.app.log.info('SIGHUP ignored: shutting down'))
    stopReleasingMemory()
    server.app.log.info({ signal }, 'shutting down')
    server.close().then(() => process.exit(0), (error: unknown) => {
      process.stderr.write(`forward-proxy: error while closing: ${(error as Error).message}\n`)
      process.exit(1)
    })
  }
  process.on('SIGINT', shutdown)
  process.on('SIGTERM', shutdown)
  // Printed once the signals are handled: a supervisor that stops the proxy as soon as it reads
  // the summary gets a graceful shutdown. A worker hands it to its first process instead.
  const summary = startupSummary(config, server.urls, server.developmentCa, server.metricsUrl).join('\n')
  if (isWorker()) reportWorkerReady(summary, () => shutdown('SIGTERM'))
  else writeBesideLog(server.app.log, `${summary}\n`)
}

/** `har-repair FILE`: one line on stdout, or the error's message on stderr and exit code 1. */
async function runHarRepair (file: string): Promise<void> {
  let result: HarRepairResult
  try {
    result = await repairHarFile(file)
  } catch (error) {
    process.stderr.write(`forward-proxy: ${(error as Error).message}\n`)
    process.exitCode = 1
    return
  }
  process.stdout.write(result.changed
    ? `${file}: repaired, ${result.entries} entries kept, ${result.droppedBytes} bytes of an unfinished entry dropped\n`
    : `${file}: valid, ${result.entries} entries\n`)
}

/**
 * Writes the summary into the logger's own destination when it has one that holds lines back
 * (the batched stream of the JSON format): process.stdout would be written at once, ahead of the
 * start-up log lines still pending ("Server listening at ..."), which would then land after or
 * inside the summary. The pretty format writes through process.stdout already, in order.
 */
function writeBesideLog (log: object, text: string): void {
  let streamSymbol: symbol | undefined
  for (let level: object | null = log; level !== null && streamSymbol === undefined; level = Object.getPrototypeOf(level) as object | null) {
    streamSymbol = Object.getOwnPropertySymbols(level).find((symbol) => symbol.description === 'pino.stream')
  }
  const stream = streamSymbol === undefined ? undefined : (log as Record<symbol, unknown>)[streamSymbol] as { write?: unknown, flushSync?: unknown } | undefined
  if (stream !== undefined && typeof stream.write === 'function' && typeof stream.flushSync === 'function') {
    (stream.write as (chunk: string) => boolean).call(stream, text)
  } else {
    process.stdout.write(text)
  }
}

main().catch((error: unknown) => {
  // Configuration and start-up errors (bad file, port in use) are the operator's to fix: a message, not a stack.
  const message = error instanceof ConfigError ? error.message : `cannot start: ${(error as Error).message}`
  process.stderr.write(`forward-proxy: ${message}\n`)
  process.exit(1)
})
