import type { Test } from 'tap'
import { ProxyAgent } from 'undici'

/** An undici ProxyAgent sending http:// requests in absolute form to `proxyUrl`; closed at teardown. */
export function absoluteFormAgent (t: Test, proxyUrl: string): ProxyAgent {
  const agent = new ProxyAgent({ uri: proxyUrl, proxyTunnel: false })
  t.teardown(() => agent.close())
  return agent
}
