import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ForwardProxyDestination } from '../../types/destination'
import type { ProxyRuntime } from '../proxy-runtime'
import { ProxyError } from '../diagnostics/proxy-error'
import { connectToDestination } from '../security/destination-connector'
import { http1ConnectContextOf } from './http1-connection'
import { relayTunnel } from './tunnel-relay'

/**
 * Opens an opaque CONNECT tunnel (SPEC 4.1 rules 1, 2, 8). Authentication has already run as
 * the route's onRequest hook; here the target, policy and the tunnel limit are checked, the
 * destination is dialed (address checked after DNS), and only then is 200 sent and the reply
 * hijacked for the byte relay. Every refusal is a thrown ProxyError, answered before any 200.
 */
export async function openConnectTunnel (
  request: FastifyRequest,
  reply: FastifyReply,
  destination: ForwardProxyDestination | null,
  runtime: ProxyRuntime
): Promise<void> {
  const context = http1ConnectContextOf(request.raw)
  if (context === undefined) {
    throw new ProxyError('http_request_error', 'CONNECT over HTTP/2 is not supported on this listener.', { status: 501 })
  }
  // The client may have left while hooks ran (a slow credential check): dial nothing for it.
  if (context.socket.destroyed) {
    reply.hijack()
    return
  }
  if (destination === null) {
    throw new ProxyError('http_request_error', 'The CONNECT target must be host:port with a port from 1 to 65535.', { details: 'bad CONNECT target' })
  }
  const { headers } = request
  if (headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0')) {
    throw new ProxyError('http_request_error', 'A CONNECT request cannot carry a body.', { details: 'CONNECT with a body' })
  }
  runtime.policy.checkDestination(destination)

  const release = runtime.tunnels.tryReserve()
  if (release === null) {
    throw new ProxyError('connection_limit_reached', 'The proxy has reached its tunnel limit; try again later.')
  }
  const { socket, head, response } = context
  // Tracked from now on, so closing the server also ends a CONNECT still waiting for DNS or the dial.
  runtime.tunnels.track(socket)
  const clientGone = new AbortController()
  const onClientClose = (): void => clientGone.abort()
  socket.once('close', onClientClose)
  let upstream
  try {
    upstream = await connectToDestination(destination, runtime.connector, clientGone.signal)
  } catch (error) {
    release()
    throw error
  } finally {
    socket.removeListener('close', onClientClose)
  }
  if (socket.destroyed) {
    upstream.destroy()
    release()
    return
  }

  reply.hijack()
  response.detachSocket(socket)
  // The server's socket inactivity timeout (Fastify connectionTimeout) is for HTTP; the tunnel has its own.
  socket.setTimeout(0)
  upstream.on('error', () => {})
  socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
  if (head.length > 0) upstream.write(head)
  runtime.tunnels.track(upstream)
  relayTunnel(socket, upstream, {
    idleTimeout: runtime.settings.limits.tunnelIdleTimeout,
    onClose: (summary) => {
      release()
      request.log.info({ tunnel: { destination: `${destination.host}:${destination.port}`, ...summary } }, 'tunnel closed')
    }
  })
}
