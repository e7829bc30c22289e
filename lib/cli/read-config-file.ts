import { readFileSync } from 'node:fs'
import { ConfigError } from './config-error'

/**
 * Reads a file named by the configuration (a certificate, a key, a CA bundle), whole.
 * @param key the configuration key that names the file, e.g. `/interception/ca/key`.
 * @throws ConfigError naming the key, the path and the error code, never the file's content.
 */
export function readConfigFile (path: string, key: string): Buffer {
  try {
    return readFileSync(path)
  } catch (error) {
    throw new ConfigError(`${key}: cannot read "${path}" (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
}
