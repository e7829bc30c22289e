// TLS termination of an intercepted tunnel: the certificate for the CONNECT target, and the
// handshake run over the client side's transport (see client-transports.ts).

import type { Server } from 'node:net'
import { createSecureContext, type SecureContext, type TLSSocket } from 'node:tls'
import type { FastifyBaseLogger } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type {
  ForwardProxyCertificate,
  ForwardProxyCertificateProvider,
  ForwardProxyPemCertificate
} from '../../types/interception'
import type { ClientTransport } from '../core/runtime'
import { recordHandshake, recordHandshakeFailure, type HandshakeFailure } from '../telemetry/tls-metrics'
import { isClientRefusal } from './client-refusals'

/** One client handshake to run on an intercepted tunnel. */
export interface TlsTermination {
  readonly transport: ClientTransport
  /** The CONNECT target: the only name a certificate is asked for (never the client's SNI). */
  readonly destination: ForwardProxyDestination
  readonly provider: ForwardProxyCertificateProvider
  /** Covers the provider's time and the handshake, so a stalled ClientHello closes the tunnel. */
  readonly handshakeTimeout: number
  /** ALPN protocols offered, in preference order. */
  readonly alpnProtocols: readonly string[]
  /** Set as the TLS socket's `server`, which Node's HTTP servers read from their connections. */
  readonly server: Server
  readonly log: FastifyBaseLogger
  /** Called when the client refused the certificate with a TLS alert (see `isClientRefusal`). */
  readonly onClientRefusal?: () => void
  /** Called when the handshake completed. */
  readonly onHandshake?: () => void
}

/**
 * Terminates the client's TLS on an intercepted tunnel: asks the provider
 * for the certificate of the CONNECT target, then runs the server side of the handshake over
 * the tunnel. Resolves with the TLS socket once the handshake is done, or null when it failed
 * and the tunnel was closed: the provider returned null or failed (the client gets a
 * handshake_failure alert), the client spoke something other than TLS, or
 * everything took longer than the handshake timeout. Never rejects.
 */
export async function terminateTls (termination: TlsTermination): Promise<TLSSocket | null> {
  const { transport, destination, provider, log } = termination
  const started = performance.now()
  const abort = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    log.info({ tunnel: { destination: `${destination.host}:${destination.port}` } }, 'intercepted tunnel closed: TLS handshake timed out')
    abort.abort()
    transport.noteHandshakeFailure('handshake-timeout')
    transport.destroy()
  }, termination.handshakeTimeout)
  timer.unref()
  const stop = (): void => { clearTimeout(timer); abort.abort() }
  transport.once('close', stop)

  let certificate: ForwardProxyCertificate | null
  try {
    certificate = await provider.getCertificate(destination, abort.signal)
  } catch (error) {
    if (!transport.destroyed) log.error({ err: error }, 'certificate provider failed; the client handshake is refused')
    certificate = null
  }
  if (transport.destroyed) {
    recordHandshakeFailure(timedOut ? 'timeout' : 'client_closed')
    return null
  }
  if (certificate === null) {
    recordHandshakeFailure('certificate_unavailable')
    stop()
    transport.refuseHandshake()
    return null
  }
  let secureContext
  try {
    secureContext = secureContextOf(certificate)
  } catch (error) {
    log.error({ err: error }, 'certificate provider returned unusable PEM material; the client handshake is refused')
    recordHandshakeFailure('certificate_unavailable')
    stop()
    transport.refuseHandshake()
    return null
  }

  const socket = transport.startTls({
    isServer: true,
    secureContext,
    ALPNProtocols: [...termination.alpnProtocols],
    server: termination.server
  })
  return await new Promise((resolve) => {
    let settled = false
    const fail = (failure: HandshakeFailure): void => {
      if (settled) return
      settled = true
      recordHandshakeFailure(timedOut ? 'timeout' : failure)
      stop()
      // A TLS socket over a stream does not close the stream it runs on; without this a client
      // that left mid-handshake would keep its tunnel slot until the handshake timeout.
      transport.destroy()
      resolve(null)
    }
    const onError = (error: Error & { code?: string }): void => {
      log.debug({ err: { code: error.code, message: error.message } }, 'intercepted tunnel: client TLS handshake failed')
      if (isClientRefusal(error)) termination.onClientRefusal?.()
      transport.noteHandshakeFailure('handshake-error', error.code ?? 'unknown')
      socket.destroy()
      fail('tls_error')
    }
    socket.once('error', onError)
    socket.once('close', () => fail('client_closed'))
    // A client that ends its side before the handshake is done can never finish it; the TLS
    // socket reports only 'end' and closes nothing, so without this the tunnel would keep its
    // slot until the handshake timeout.
    socket.once('end', () => {
      if (settled) return
      socket.destroy()
      transport.destroy()
      fail('client_closed')
    })
    socket.once('secure', () => {
      settled = true
      recordHandshake(started, socket.getProtocol())
      termination.onHandshake?.()
      clearTimeout(timer)
      transport.removeListener('close', stop)
      socket.removeListener('error', onError)
      // Later failures belong to the HTTP server the socket is handed to; this keeps one from crashing us.
      socket.on('error', () => {})
      resolve(socket)
    })
  })
}

// One SecureContext per object a provider returned: a provider that caches its PEM objects
// (as it should: it is called on every handshake) gets its contexts built once, not on every handshake.
const contexts = new WeakMap<ForwardProxyPemCertificate, SecureContext>()

/**
 * The SecureContext for what a certificate provider returned: the context itself, or one
 * built once from PEM material (leaf, then intermediates).
 * @throws Error when the PEM material cannot be loaded (bad PEM, key not matching the leaf).
 */
function secureContextOf (certificate: ForwardProxyCertificate): SecureContext {
  if (!isPem(certificate)) return certificate
  let context = contexts.get(certificate)
  if (context === undefined) {
    const { cert, key, chain } = certificate
    const intermediates = chain === undefined ? [] : Array.isArray(chain) ? chain : [chain]
    const pem = [cert, ...intermediates].map((part) => (typeof part === 'string' ? part : part.toString('latin1')).trim())
    context = createSecureContext({ cert: `${pem.join('\n')}\n`, key })
    contexts.set(certificate, context)
  }
  return context
}

function isPem (certificate: ForwardProxyCertificate): certificate is ForwardProxyPemCertificate {
  return 'cert' in certificate && 'key' in certificate
}
