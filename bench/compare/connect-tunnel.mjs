// Opens one HTTP/1.1 CONNECT tunnel through a plain-text proxy on 127.0.0.1, and optionally TLS
// inside it: shared by the idle-tunnel, leaf and SSE clients of the comparison.
import { connect, isIP } from 'node:net'
import { checkServerIdentity as nodeCheckServerIdentity, connect as tlsConnect } from 'node:tls'
import { readConnectResponse } from '../connect-response.mjs'

/**
 * The benchmark clients' check of the name in a certificate: Node's, except that a leaf naming
 * an IP-literal target as a DNS name (`DNS:127.0.0.2`) is accepted. Squid's client-first bump
 * (`ssl_bump bump` at step 1) generates its leaf from the CONNECT target that way, which strict
 * clients refuse; the chain is still verified against the CA the client trusts.
 */
export function checkServerIdentity (host, cert) {
  const error = nodeCheckServerIdentity(host, cert)
  if (error === undefined || isIP(host) === 0) return error
  return (cert.subjectaltname ?? '').split(', ').includes(`DNS:${host}`) ? undefined : error
}

/**
 * Resolves with the socket once the proxy answered 2xx to `CONNECT host:port` (sent with
 * `authorization` as its `Proxy-Authorization` when given); rejects otherwise.
 */
export async function openTunnel (proxyPort, host, port, authorization) {
  const credentials = authorization === undefined ? '' : `Proxy-Authorization: ${authorization}\r\n`
  const socket = connect(proxyPort, '127.0.0.1', () => socket.write(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\n${credentials}\r\n`))
  const { status, head } = await readConnectResponse(socket)
  if (!(status >= 200 && status < 300)) {
    socket.destroy()
    throw new Error(`CONNECT refused: ${head.split('\r\n')[0]}`)
  }
  return socket
}

/** TLS (HTTP/1.1 ALPN) over `socket`, checking the certificate for `host` against `ca`. */
export function startTls (socket, host, ca) {
  return new Promise((resolve, reject) => {
    const tls = tlsConnect({ socket, host, ca, ALPNProtocols: ['http/1.1'], checkServerIdentity }, () => { tls.removeListener('error', reject); resolve(tls) })
    tls.once('error', reject)
  })
}

/** Writes `GET path` (keep-alive) on `stream` and resolves when the response head has arrived. */
export function getHead (stream, host, path) {
  return new Promise((resolve, reject) => {
    let received = ''
    const onData = (chunk) => {
      received += chunk.toString('latin1')
      if (!received.includes('\r\n\r\n')) return
      stream.removeListener('data', onData)
      stream.removeListener('error', reject)
      resolve(received)
    }
    stream.on('data', onData)
    stream.once('error', reject)
    stream.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
  })
}

/** Runs `task(i)` for i in 0..count-1 with at most `concurrency` at a time; resolves with the failures. */
export async function runPool (count, concurrency, task) {
  let next = 0
  const failures = []
  const worker = async () => {
    while (next < count) {
      const i = next++
      try { await task(i) } catch (error) { failures.push(error) }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  return failures
}
