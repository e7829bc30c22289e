/** The meter's name (the instrumentation scope): the package name. */
export const PROXY_METER_NAME = 'fastify-forward-proxy'

/** The meter's version (the instrumentation scope version): the package version. */
export const PROXY_METER_VERSION: string = packageVersion()

/**
 * The package version, read through the package's own name (its `exports` lists
 * `./package.json`), so it resolves the same from the TypeScript sources and from `dist/`.
 */
function packageVersion (): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const manifest = require('fastify-forward-proxy/package.json') as { version?: unknown }
  return typeof manifest.version === 'string' ? manifest.version : '0.0.0'
}
