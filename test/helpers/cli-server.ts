import type { Test } from 'tap'
import { parseConfig, startProxyServer, type RunningProxyServer, type StartOptions } from './internals'

/**
 * Starts the bundled server in-process from a configuration object (validated like a file in
 * `dir`), logging silenced unless `value.log` says otherwise; closed at teardown.
 */
export async function startConfiguredServer (t: Test, value: object, dir = '/', options: StartOptions = {}): Promise<RunningProxyServer> {
  const server = await startProxyServer(parseConfig({ log: { level: 'silent' }, ...value }, 'test.json', dir), options)
  t.teardown(() => server.close())
  return server
}

/** The port of a listener URL printed by the server. */
export const portOf = (url: string | undefined): number => Number(new URL(url ?? '').port)

/** A policy letting tests reach origins on 127.0.0.1, any port, and nothing else private. */
export const LOOPBACK_ORIGINS = { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' } as const
