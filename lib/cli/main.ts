#!/usr/bin/env node
import { ConfigError, DEFAULT_LISTENER, loadConfigFile, parseConfig, type ProxyServerConfig } from './config'
import { startProxyServer } from './build-server'
import { startupSummary } from './startup-summary'

const USAGE = `Usage: forward-proxy [--config <file>]

Runs fastify-forward-proxy. Without a configuration file: an HTTP/1.1 proxy on
${DEFAULT_LISTENER.host}:${DEFAULT_LISTENER.port}, no authentication, strict destination policy.
The file can also be given with FORWARD_PROXY_CONFIG. Reference: docs/configuration.md`

/** Reads the command line; returns the configuration file path, if any. */
function configPathFromArguments (args: readonly string[]): string | undefined | 'help' {
  let path = process.env.FORWARD_PROXY_CONFIG
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    if (arg === '--help' || arg === '-h') return 'help'
    if (arg === '--config') {
      path = args[++i]
      if (path === undefined) throw new ConfigError('--config needs a file path')
    } else if (arg?.startsWith('--config=') === true) {
      path = arg.slice('--config='.length)
    } else {
      throw new ConfigError(`unknown argument "${arg ?? ''}" (see --help)`)
    }
  }
  return path === '' ? undefined : path
}

async function main (): Promise<void> {
  const path = configPathFromArguments(process.argv.slice(2))
  if (path === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  const config: ProxyServerConfig = path === undefined ? parseConfig({}, 'built-in defaults', process.cwd()) : loadConfigFile(path)
  const server = await startProxyServer(config)
  process.stdout.write(`${startupSummary(config, server.urls).join('\n')}\n`)

  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    server.app.log.info({ signal }, 'shutting down')
    server.close().then(() => process.exit(0), () => process.exit(1))
  }
  process.once('SIGINT', () => shutdown('SIGINT'))
  process.once('SIGTERM', () => shutdown('SIGTERM'))
}

main().catch((error: unknown) => {
  // Configuration and start-up errors are the operator's to fix: a message, not a stack.
  const message = error instanceof ConfigError ? error.message : `cannot start: ${(error as Error).message}`
  process.stderr.write(`forward-proxy: ${message}\n`)
  process.exit(1)
})
