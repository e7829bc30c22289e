// Secrets of the configuration file: named credentials read from an environment variable or a
// file at start-up and at every reload (never written in the file itself), put into header rules where a value
// says `{{secret:NAME}}` as the secret's placeholder (config.ts checks, when the file is read,
// that each such rule only names hosts the secret is granted to), and handed to the plugin, which
// puts values in place of placeholders.

import type { ForwardProxyHeaderRule } from '../../types/header-rules'
import type { ForwardProxySecret } from '../../types/secrets'
import { SECRET_VALUE, defaultPlaceholder } from '../security/secret-values'
import { SECRET_REFERENCE, secretReferencesIn, type SecretConfig } from './config'
import { readPrivateFile } from './config-files'
import { ConfigError } from './config-errors'

/**
 * Reads the value of every secret: the environment variable or the file (whose permissions are
 * checked like a private key's), one trailing line break removed. A missing or
 * empty value, or one a header cannot carry, fails start-up (or the reload).
 * @throws ConfigError naming the secret and where it was looked for, never its value.
 */
export function loadSecrets (secrets: Readonly<Record<string, SecretConfig>> | undefined, env: NodeJS.ProcessEnv = process.env): Map<string, string> {
  const values = new Map<string, string>()
  for (const [name, secret] of Object.entries(secrets ?? {})) {
    const key = `/secrets/${name}`
    const value = readCredential(secret, key, { file: 'secret file', thing: 'secret' }, env)
    if (!SECRET_VALUE.test(value)) throw new ConfigError(`${key}: the value must be 8 to 4096 visible ASCII characters (no spaces, line breaks or controls)`)
    values.set(name, value)
  }
  return values
}

/**
 * Reads a credential the configuration file names the source of (`{ env }` or `{ file }`, the
 * file's permissions checked like a private key's), one trailing line break removed.
 * @throws ConfigError naming `key` and where it was looked for, never the value, when it is not
 * set, cannot be read, may be read by others, or is empty.
 */
export function readCredential (
  source: { readonly env?: string, readonly file?: string },
  key: string,
  names: { readonly file: string, readonly thing: string },
  env: NodeJS.ProcessEnv = process.env
): string {
  let value: string
  if (source.env !== undefined) {
    const found = env[source.env]
    if (found === undefined) throw new ConfigError(`${key}: the environment variable ${source.env} is not set`)
    value = found
  } else {
    const content = readPrivateFile(source.file ?? '', key, names)
    value = content.toString('utf8')
    content.fill(0)
  }
  value = value.replace(/\r?\n$/, '')
  if (value === '') throw new ConfigError(`${key}: the value is empty`)
  return value
}

/** The plugin's `secrets` option: each secret of the file with its value. */
export function secretsOption (secrets: Readonly<Record<string, SecretConfig>>, values: ReadonlyMap<string, string>): ForwardProxySecret[] {
  return Object.entries(secrets).map(([name, secret]) => ({
    name,
    value: values.get(name) ?? '',
    hosts: secret.hosts,
    ...(secret.placeholder === undefined ? {} : { placeholder: secret.placeholder })
  }))
}

/**
 * The header rules with every `{{secret:NAME}}` replaced by the secret's placeholder. The plugin
 * puts the value in place of the placeholder as the request leaves, checked like a client's
 * placeholder: only toward a host and port the secret is granted to, only for a user granted
 * the secret (others get 403 and nothing is sent), only over TLS. A rule that uses a secret is
 * also `tlsOnly`: a plain `http://` request to its hosts is refused before anything is dialed.
 */
export function resolveSecretReferences (
  headers: readonly ForwardProxyHeaderRule[],
  secrets: Readonly<Record<string, SecretConfig>>
): ForwardProxyHeaderRule[] {
  return headers.map((rule) => {
    const set = rule.set ?? {}
    if (!Object.values(set).some((value) => secretReferencesIn(value).length > 0)) return rule
    const resolved = Object.fromEntries(Object.entries(set).map(([name, value]) => [
      name,
      value.replace(SECRET_REFERENCE, (_match, secretName: string) => placeholderOf(secretName, secrets[secretName]))
    ]))
    return { ...rule, set: resolved, tlsOnly: true }
  })
}

function placeholderOf (name: string, secret: SecretConfig | undefined): string {
  // checkSecretReferences made sure, when the file was read, that every reference names a secret.
  if (secret === undefined) throw new ConfigError(`/secrets/${name} is not defined`)
  return secret.placeholder ?? defaultPlaceholder(name)
}
