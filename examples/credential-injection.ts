// Credential injection from code: the proxy adds an API credential to the requests of some of
// its users, so their clients never hold the secret. Only the tunnels of users who have a
// secret, and only to the one API, are intercepted; every other tunnel stays opaque.
//
// Run it (the operator CA is what clients trust for the API while they use this proxy):
//   PROXY_CA_CERT=ca.pem PROXY_CA_KEY=ca.key API_ORIGIN=https://api.example.com \
//   ALICE_PASSWORD=... BOB_PASSWORD=... ALICE_API_TOKEN=... npm run example:credential-injection
// (it builds, then runs dist/examples/credential-injection.js)
// then, as alice: curl --proxy http://alice:...@127.0.0.1:8080 --cacert ca.pem https://api.example.com/
// Optional: PROXY_HOST, PROXY_PORT (default 127.0.0.1:8080, 0 for any free port), API_CA (extra CA trusted for the
// API), ALLOWED_NETWORKS (comma-separated CIDRs, for an API on a private network).
import { readFileSync } from 'node:fs'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import {
  createCaCertificateProvider,
  forwardProxy,
  tlsInterception,
  type ForwardProxyDestination,
  type ForwardProxyInterceptionSelector,
  type ForwardProxyRequestTransform
} from 'fastify-forward-proxy'

/** What {@link startCredentialInjectionProxy} needs. */
export interface CredentialInjectionConfig {
  /** Address to listen on. */
  readonly host: string
  /** Port to listen on (0 for any free port). */
  readonly port: number
  /** The API that gets the credential: its https:// origin, e.g. `https://api.example.com`. */
  readonly apiOrigin: string
  /** Proxy users and their passwords (Basic `Proxy-Authorization`). */
  readonly users: Readonly<Record<string, string>>
  /**
   * The API secret of each user who gets one. Only these users' tunnels to the API are
   * intercepted; the others' stay opaque, end to end between their client and the API.
   */
  readonly apiTokens: ReadonlyMap<string, string>
  /** The operator CA (PEM) that leaves for the API are minted from; clients trust it. */
  readonly ca: { readonly cert: string | Buffer, readonly key: string | Buffer }
  /** Extra CA certificates (PEM) trusted for the API, besides Node's roots. */
  readonly apiCa?: string | Buffer
  /** CIDR ranges of a private network the API lives on (the proxy refuses them otherwise). */
  readonly allowedNetworks?: readonly string[]
  /** Fastify's logger option. Default true (JSON lines on stdout). */
  readonly logger?: FastifyServerOptions['logger']
}

/**
 * Starts a Fastify forward proxy that injects `Authorization: Bearer <secret>` into the
 * requests its users with a secret send to the API, and returns the listening instance.
 * @throws ForwardProxyOptionsError for an unusable option, ForwardProxyCertificateError for an
 * unusable CA, TypeError when `apiOrigin` is not an https:// URL.
 */
export async function startCredentialInjectionProxy (config: CredentialInjectionConfig): Promise<FastifyInstance> {
  const api = apiDestination(config.apiOrigin)
  const { apiTokens } = config
  const app = Fastify({ logger: config.logger ?? true })

  // The app's hooks see every request, the proxy's included. request.interception is set only
  // for requests that came through an intercepted tunnel: the CONNECT that opened the tunnel,
  // http:// forwarding and the app's own routes have null.
  app.addHook('onRequest', async (request) => {
    if (request.interception === null) return
    // Log who used the API through the proxy; never headers, which will hold the secret.
    request.log.info({ user: request.proxyUser?.name, api: request.interception.destination.host, method: request.method, path: request.url }, 'API request with an injected credential')
  })

  // Decides once per tunnel, after authentication and destination policy, with the user known.
  const selector: ForwardProxyInterceptionSelector = {
    shouldIntercept (request, destination) {
      const user = request.proxyUser
      return user !== null && apiTokens.has(user.name) && sameDestination(destination, api)
    }
  }

  // Given to tlsInterception, it runs only for requests inside intercepted tunnels (never for
  // http:// forwarding, where the secret would travel in clear text).
  const injectApiToken: ForwardProxyRequestTransform = {
    appliesTo: (_request, destination) => sameDestination(destination, api),
    transformRequest (request, _destination, outgoing) {
      const token = request.proxyUser === null ? undefined : apiTokens.get(request.proxyUser.name)
      if (token === undefined) return
      // Replaces whatever the client sent: the credential is the proxy's choice, not the client's.
      outgoing.headers.authorization = `Bearer ${token}`
    }
  }

  await app.register(forwardProxy, {
    auth: { users: config.users },
    destinations: {
      allowedPorts: [...new Set([80, 443, api.port])],
      ...(config.allowedNetworks === undefined ? {} : { allowedNetworks: config.allowedNetworks })
    }
  })
  await app.register(tlsInterception, {
    selector,
    certificateProvider: createCaCertificateProvider({ cert: config.ca.cert, key: config.ca.key }),
    transforms: [injectApiToken],
    ...(config.apiCa === undefined ? {} : { trustedDestinationCa: config.apiCa })
  })
  await app.listen({ host: config.host, port: config.port })
  return app
}

/** The host and port of an https:// origin. */
function apiDestination (origin: string): ForwardProxyDestination {
  const url = new URL(origin)
  if (url.protocol !== 'https:') throw new TypeError(`API_ORIGIN must be an https:// URL: ${origin}`)
  // The proxy compares hosts in canonical form: lower case, IPv6 literals without brackets.
  return { host: url.hostname.replace(/^\[|\]$/g, '').toLowerCase(), port: url.port === '' ? 443 : Number(url.port) }
}

function sameDestination (a: ForwardProxyDestination, b: ForwardProxyDestination): boolean {
  return a.host === b.host && a.port === b.port
}

function requiredEnv (name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`set ${name}`)
  return value
}

async function main (): Promise<void> {
  const app = await startCredentialInjectionProxy({
    host: process.env.PROXY_HOST ?? '127.0.0.1',
    port: Number(process.env.PROXY_PORT ?? 8080),
    apiOrigin: process.env.API_ORIGIN ?? 'https://api.example.com',
    // In a real deployment users and secrets come from your user store or secret manager.
    users: { alice: requiredEnv('ALICE_PASSWORD'), bob: requiredEnv('BOB_PASSWORD') },
    apiTokens: new Map([['alice', requiredEnv('ALICE_API_TOKEN')]]),
    ca: { cert: readFileSync(requiredEnv('PROXY_CA_CERT')), key: readFileSync(requiredEnv('PROXY_CA_KEY')) },
    ...(process.env.API_CA === undefined ? {} : { apiCa: readFileSync(process.env.API_CA) }),
    ...(process.env.ALLOWED_NETWORKS === undefined ? {} : { allowedNetworks: process.env.ALLOWED_NETWORKS.split(',').map((cidr) => cidr.trim()) })
  })
  const close = (): void => { void app.close().then(() => process.exit(0)) }
  process.once('SIGINT', close)
  process.once('SIGTERM', close)
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error)
    process.exit(1)
  })
}
