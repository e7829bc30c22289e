import { octalMode, tooOpenKeyFileMode } from '../certificates/key-file-mode'
import { ConfigError } from './config-error'
import { readConfigFile } from './read-config-file'

/**
 * Reads a private key file named by the configuration (a TLS listener's key, the interception
 * CA's key, the EST client key) and refuses it when group or others may read, write or run it,
 * as ssh does: such a key may already be in other hands.
 * @param key the configuration key that names the file, e.g. `/listen/0/tls/key`.
 * @throws ConfigError naming the key, the path and the mode (or the read error), never the file's content.
 */
export function readKeyFile (path: string, key: string): Buffer {
  const content = readConfigFile(path, key)
  let mode: number | undefined
  try {
    mode = tooOpenKeyFileMode(path)
  } catch (error) {
    content.fill(0)
    throw new ConfigError(`${key}: cannot read "${path}" (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  if (mode !== undefined) {
    content.fill(0)
    throw new ConfigError(`${key}: permissions ${octalMode(mode)} for the private key "${path}" are too open: it must be readable by the proxy's user only. Run "chmod 600 ${path}" if nobody else could have read it; otherwise treat the key as exposed and replace it`)
  }
  return content
}
