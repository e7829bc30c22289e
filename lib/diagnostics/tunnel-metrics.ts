import type { Attributes } from '@opentelemetry/api'
import { proxyInstruments } from './proxy-instruments'

/**
 * What kind of tunnel a CONNECT opened: relayed opaquely over an HTTP/1.1 connection
 * (`opaque`) or an HTTP/2 stream (`http2`), or intercepted (`intercepted`, over either).
 */
export type TunnelKind = 'opaque' | 'http2' | 'intercepted'

/** The attribute naming a tunnel's kind on the tunnel instruments. */
export const TUNNEL_KIND_ATTRIBUTE = 'forward_proxy.tunnel.kind'

/** The attribute naming why a tunnel ended, on its duration. */
export const TUNNEL_CLOSE_REASON_ATTRIBUTE = 'forward_proxy.tunnel.close_reason'

/** How a tunnel ended, as reported by its relay. */
export interface TunnelOutcome {
  readonly bytesUp: number
  readonly bytesDown: number
  readonly reason: string
}

const KIND_ATTRIBUTES: Readonly<Record<string, Attributes>> = Object.freeze({
  'opaque/1.1': attributes('opaque', '1.1'),
  'http2/2': attributes('http2', '2'),
  'intercepted/1.1': attributes('intercepted', '1.1'),
  'intercepted/2': attributes('intercepted', '2')
})

function attributes (kind: TunnelKind, version: '1.1' | '2'): Attributes {
  return Object.freeze({ [TUNNEL_KIND_ATTRIBUTE]: kind, 'network.protocol.version': version })
}

/**
 * Records one tunnel on the tunnel instruments: `forward_proxy.tunnel.active` +1 now, and when
 * the returned function is called (once, at close) -1 plus its duration and the bytes it
 * carried each way. `http2` says whether the CONNECT came on an HTTP/2 stream.
 */
export function recordTunnelOpen (kind: TunnelKind, http2: boolean): (outcome: TunnelOutcome) => void {
  const base = KIND_ATTRIBUTES[`${kind}/${http2 ? '2' : '1.1'}`] ?? attributes(kind, http2 ? '2' : '1.1')
  const opened = performance.now()
  proxyInstruments().activeTunnels.add(1, base)
  let closed = false
  return (outcome) => {
    if (closed) return
    closed = true
    const instruments = proxyInstruments()
    instruments.activeTunnels.add(-1, base)
    if (!instruments.enabled) return
    instruments.tunnelDuration.record((performance.now() - opened) / 1000, { ...base, [TUNNEL_CLOSE_REASON_ATTRIBUTE]: outcome.reason })
    instruments.tunnelUpload.record(outcome.bytesUp, base)
    instruments.tunnelDownload.record(outcome.bytesDown, base)
  }
}
