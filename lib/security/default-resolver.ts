import { lookup } from 'node:dns/promises'
import type { ForwardProxyResolver, ResolvedAddress } from '../../types/options'

/** Resolves with the system resolver (`dns.lookup`, all addresses, in the order it returns). */
export const systemResolver: ForwardProxyResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true })
  return answers.map(({ address, family }): ResolvedAddress => ({ address, family: family === 6 ? 6 : 4 }))
}
