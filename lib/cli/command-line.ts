import { ConfigError } from './config-error'
import { loadConfigFile, parseConfig, type ProxyServerConfig } from './config'

/** What the `forward-proxy` command line asks for. */
export interface CommandLine {
  readonly help: boolean
  /** `--config <file>`, else `FORWARD_PROXY_CONFIG`; none means the built-in defaults. */
  readonly configPath?: string
  /** `--host` / `--port`: override the first listener's address (e.g. `--port 0` for a free port). */
  readonly host?: string
  readonly port?: number
}

/**
 * Parses `forward-proxy [--config <file>] [--host <address>] [--port <n>] [--help]`;
 * `--name=value` works too.
 * @throws ConfigError for an unknown argument or a missing or bad value.
 */
export function parseCommandLine (args: readonly string[], env: NodeJS.ProcessEnv = process.env): CommandLine {
  const values: { configPath?: string, host?: string, port?: number } = {}
  if (env.FORWARD_PROXY_CONFIG !== undefined && env.FORWARD_PROXY_CONFIG !== '') values.configPath = env.FORWARD_PROXY_CONFIG
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? ''
    if (arg === '--help' || arg === '-h') return { help: true }
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined]
    if (name !== '--config' && name !== '--host' && name !== '--port') throw new ConfigError(`unknown argument "${arg}" (see --help)`)
    const value = inline ?? args[++i]
    if (value === undefined || value === '') throw new ConfigError(`${name} needs a value`)
    if (name === '--config') values.configPath = value
    else if (name === '--host') values.host = value
    else values.port = portNumber(value)
  }
  return { help: false, ...values }
}

/**
 * The configuration the command line selects: the file (or the built-in defaults) with
 * `--host`/`--port` applied to the first listener.
 * @throws ConfigError when the file cannot be read or breaks the schema.
 */
export function configFromCommandLine (commandLine: CommandLine, cwd: string = process.cwd()): ProxyServerConfig {
  const config = commandLine.configPath === undefined
    ? parseConfig({}, 'built-in defaults', cwd)
    : loadConfigFile(commandLine.configPath)
  const [first, ...others] = config.listen
  if (first === undefined || (commandLine.host === undefined && commandLine.port === undefined)) return config
  return {
    ...config,
    listen: [{ ...first, host: commandLine.host ?? first.host, port: commandLine.port ?? first.port }, ...others]
  }
}

function portNumber (text: string): number {
  const port = Number(text)
  if (!/^\d+$/.test(text) || port > 65535) throw new ConfigError(`--port must be an integer from 0 to 65535, got "${text}"`)
  return port
}
