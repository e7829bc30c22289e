import type { InterceptionPki } from './interception-pki'

/** Passwords and the API token examples/credential-injection.ts is started with. */
export interface InjectionExampleSecrets {
  alicePassword: string
  bobPassword: string
  aliceApiToken: string
}

/**
 * The environment that starts examples/credential-injection.ts on 127.0.0.1 (any free port)
 * with the test PKI: the operator CA to intercept with, the API on 127.0.0.1:`apiPort` trusted
 * through the destination CA.
 */
export function credentialInjectionEnv (pki: InterceptionPki, apiPort: number, secrets: InjectionExampleSecrets): Record<string, string> {
  return {
    PROXY_PORT: '0',
    PROXY_CA_CERT: pki.operatorCa.certPath,
    PROXY_CA_KEY: pki.operatorCa.certPath.replace(/\.pem$/, '.key'),
    API_ORIGIN: `https://127.0.0.1:${apiPort}`,
    API_CA: pki.destinationCa.certPath,
    ALLOWED_NETWORKS: '127.0.0.1/32',
    ALICE_PASSWORD: secrets.alicePassword,
    BOB_PASSWORD: secrets.bobPassword,
    ALICE_API_TOKEN: secrets.aliceApiToken
  }
}
