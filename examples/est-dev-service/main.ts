// The development EST CA service: `npm run example:est-dev-service` (builds, then runs
// dist/examples/est-dev-service/main.js; see README.md).
import { readFileSync } from 'node:fs'
import { buildEstService } from './est-service'

/** Reads the configuration from the environment (see README.md), starts the service. */
async function main (): Promise<void> {
  const env = process.env
  const required = (name: string): string => {
    const value = env[name]
    if (value === undefined || value === '') throw new Error(`est-dev-service: set ${name} (see examples/est-dev-service/README.md)`)
    return value
  }
  const users: Record<string, string> = {}
  for (const entry of (env.EST_USERS ?? '').split(',').filter((value) => value !== '')) {
    const colon = entry.indexOf(':')
    if (colon > 0) users[entry.slice(0, colon)] = entry.slice(colon + 1)
  }
  const app = await buildEstService({
    ca: { cert: readFileSync(required('EST_CA_CERT')), key: readFileSync(required('EST_CA_KEY')), ...(env.EST_CA_PASSPHRASE === undefined ? {} : { passphrase: env.EST_CA_PASSPHRASE }) },
    allowlist: required('EST_ALLOWLIST').split(','),
    users,
    ...(env.EST_CLIENT_CA === undefined ? {} : { clientCa: readFileSync(env.EST_CLIENT_CA) }),
    serverName: env.EST_SERVER_NAME ?? 'localhost',
    logger: { level: 'info' }
  })
  const address = await app.listen({ host: env.EST_HOST ?? '127.0.0.1', port: Number(env.EST_PORT ?? 8443) })
  console.warn(`est-dev-service: listening on ${address}/.well-known/est/ (cacerts, simpleenroll)`)
}

main().catch((error: Error) => {
  console.error(error.message)
  process.exit(1)
})
