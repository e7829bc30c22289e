// The traffic of the soak run (bench/soak.mjs): weighted scenarios, ordinary and faulty. Each
// checks its own outcome and reports to `stats`:
// - a response or tunnel that claims success (200 and a clean end, or every announced byte)
//   must carry exactly the bytes the origin sent (SHA-256), else a `hashMismatch` violation;
// - a destination reset mid-body must reach the client as an error or a short body, never as a
//   complete success (`truncatedSuccess`);
// - DNS failures must answer 502 `dns_error` / 504 `dns_timeout` (`wrongOutcome` otherwise);
// - an idle tunnel must be closed by the proxy within its idle timeout plus a margin
//   (`idleOverrun`).
import { createHash, randomBytes, randomInt } from 'node:crypto'
import { request as undiciRequest } from 'undici'
import { forwardRequest, openH1Tunnel, openH2Tunnel, readAll, writeBody } from './soak-clients.mjs'

const sha256 = (data) => createHash('sha256').update(data).digest('hex')
let nextId = 0
const newId = () => `s${process.pid}-${++nextId}`
/** Sizes spread over 0 B to 4 MiB, most of them small (log-uniform). */
const randomSize = (max = 4 * 1024 * 1024) => Math.floor(Math.exp(Math.random() * Math.log(max + 1))) - 1

/**
 * Builds the scenarios. `env`: { proxy: { plainPort }, h2Session() (an HTTP/2 session to the
 * proxy's TLS listener), ports (origin ports), expected (id -> SHA-256), touch(id) (the client
 * of tunnel `id` received bytes), agent (http.Agent),
 * intercepting (undici ProxyAgent trusting the operator CA), stats, tunnelIdleTimeout,
 * idleMargin }.
 */
export function createScenarios (env) {
  const { ports, expected, stats } = env
  const tcp = `tcp.soak.test:${ports.tcp}`
  const web = `web.soak.test:${ports.http}`
  const mitm = `mitm.soak.test:${ports.https}`

  /** Compares a completed read with what the origin recorded under `id`. */
  function verify (scenario, id, result, size) {
    if (!result.completed && (size === undefined || result.bytes !== size)) {
      stats.unexpected(scenario, new Error(`body cut after ${result.bytes} bytes`))
      return
    }
    if (result.sha256 !== expected.get(id)) {
      stats.violation('hashMismatch', `${scenario} ${id}: ${result.bytes} bytes`)
      return
    }
    stats.verified(result.bytes)
    expected.delete(id)
  }

  const openTunnel = async (protocol, authority, ctx) => {
    const opened = protocol === 'h2' ? await openH2Tunnel(env.h2Session(), authority, ctx) : await openH1Tunnel(env.proxy.plainPort, authority, ctx)
    if (opened.socket !== undefined) stats.tunnel(protocol)
    return opened
  }
  const requireTunnel = async (protocol, authority, ctx) => {
    const opened = await openTunnel(protocol, authority, ctx)
    if (opened.socket === undefined) throw new Error(`CONNECT refused: ${opened.head}`)
    return opened.socket
  }

  async function forwardDownload (ctx, { slow = false } = {}) {
    const id = newId()
    const size = randomSize()
    const chunked = Math.random() < 0.5 ? '&chunked=1' : ''
    const { response } = await forwardRequest(env.proxy.plainPort, env.agent, 'GET', `http://${web}/download?id=${id}&size=${size}${chunked}`, ctx)
    stats.request('forward')
    if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`)
    verify('forward-download', id, await readAll(response, { slow }))
  }

  async function forwardUpload (ctx) {
    const body = randomBytes(randomSize(2 * 1024 * 1024))
    const { response } = await forwardRequest(env.proxy.plainPort, env.agent, 'POST', `http://${web}/upload`, ctx, body)
    stats.request('forward')
    const chunks = []
    for await (const chunk of response) chunks.push(chunk)
    const answer = JSON.parse(Buffer.concat(chunks).toString())
    if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`)
    if (answer.sha256 !== sha256(body)) stats.violation('hashMismatch', `forward-upload: ${body.length} bytes sent, ${answer.bytes} arrived`)
    else stats.verified(body.length)
  }

  async function forwardSse (ctx) {
    const id = newId()
    const { response } = await forwardRequest(env.proxy.plainPort, env.agent, 'GET', `http://${web}/sse?id=${id}&events=${randomInt(5, 60)}`, ctx)
    stats.request('forward')
    if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`)
    verify('forward-sse', id, await readAll(response))
  }

  async function interceptedDownload (ctx) {
    const id = newId()
    const size = randomSize()
    const response = await undiciRequest(`https://${mitm}/download?id=${id}&size=${size}`, { dispatcher: env.intercepting, signal: ctx.signal })
    stats.request('intercepted')
    if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`)
    const hash = createHash('sha256')
    let bytes = 0
    for await (const chunk of response.body) { hash.update(chunk); bytes += chunk.length }
    verify('intercepted-download', id, { sha256: hash.digest('hex'), bytes, completed: true })
  }

  async function interceptedUpload (ctx) {
    const body = randomBytes(randomSize(2 * 1024 * 1024))
    const response = await undiciRequest(`https://${mitm}/upload`, { method: 'POST', body, dispatcher: env.intercepting, signal: ctx.signal })
    stats.request('intercepted')
    const answer = await response.body.json()
    if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`)
    if (answer.sha256 !== sha256(body)) stats.violation('hashMismatch', `intercepted-upload: ${body.length} bytes sent, ${answer.bytes} arrived`)
    else stats.verified(body.length)
  }

  async function tunnelDownload (ctx, protocol, { slow = false } = {}) {
    const id = `${newId()}-${protocol}${slow ? '-slow' : ''}`
    const size = randomSize()
    const socket = await requireTunnel(protocol, tcp, ctx)
    socket.write(`GET ${id} ${size}\n`)
    const result = await readAll(socket, { slow, onData: () => env.touch(id) })
    socket.end()
    verify(`tunnel-${protocol}-download`, id, { ...result, completed: result.bytes === size }, size)
  }

  async function tunnelUpload (ctx, protocol) {
    const body = randomBytes(randomSize(2 * 1024 * 1024))
    const socket = await requireTunnel(protocol, tcp, ctx)
    const chunks = []
    socket.on('data', (chunk) => chunks.push(chunk))
    const answer = readAll(socket)
    socket.write(`PUT upload ${body.length}\n`)
    await writeBody(socket, body)
    await answer
    const [hash] = Buffer.concat(chunks).toString().split(' ')
    if (hash !== sha256(body)) stats.violation('hashMismatch', `tunnel-${protocol}-upload: ${body.length} bytes`)
    else stats.verified(body.length)
  }

  async function interceptedReset (ctx) {
    stats.fault('destinationReset')
    const size = 65536 + randomSize(2 * 1024 * 1024)
    try {
      const response = await undiciRequest(`https://${mitm}/reset?size=${size}`, { dispatcher: env.intercepting, signal: ctx.signal })
      stats.request('intercepted')
      let bytes = 0
      for await (const chunk of response.body) bytes += chunk.length
      if (response.statusCode === 200) stats.violation('truncatedSuccess', `intercepted-reset: ${bytes} of ${size} bytes read as a complete body`)
    } catch {
      // The client saw the cut: the expected outcome.
    }
  }

  async function forwardReset (ctx) {
    stats.fault('destinationReset')
    const size = 65536 + randomSize(2 * 1024 * 1024)
    const { response } = await forwardRequest(env.proxy.plainPort, env.agent, 'GET', `http://${web}/reset?size=${size}`, ctx)
    stats.request('forward')
    const result = await readAll(response)
    if (response.statusCode === 200 && result.completed && response.complete) {
      stats.violation('truncatedSuccess', `forward-reset: ${result.bytes} of ${size} bytes read as a complete body`)
    }
  }

  async function tunnelReset (ctx, protocol) {
    stats.fault('destinationReset')
    const size = 65536 + randomSize(2 * 1024 * 1024)
    const socket = await requireTunnel(protocol, tcp, ctx)
    socket.write(`RST reset ${size}\n`)
    const result = await readAll(socket)
    socket.destroy()
    if (result.bytes >= size) stats.violation('truncatedSuccess', `tunnel-${protocol}-reset: ${result.bytes} bytes from an origin that sent ${size >> 1}`)
  }

  /** A name that does not resolve: 502 dns_error, for an http:// request or a CONNECT. */
  async function dnsFailure (ctx, kind) {
    const slow = kind === 'dnsTimeout'
    stats.fault(kind)
    const host = `${slow ? 'slowdns' : 'nx'}-${newId()}.soak.test`
    const wanted = slow ? [504, 'dns_timeout'] : [502, 'dns_error']
    let status
    let proxyStatus
    if (Math.random() < 0.5) {
      const { response } = await forwardRequest(env.proxy.plainPort, env.agent, 'GET', `http://${host}:${ports.http}/`, ctx)
      stats.request('forward')
      response.resume()
      status = response.statusCode
      proxyStatus = String(response.headers['proxy-status'] ?? '')
    } else {
      const protocol = Math.random() < 0.5 ? 'h1' : 'h2'
      const opened = await openTunnel(protocol, `${host}:${ports.tcp}`, ctx)
      if (opened.socket !== undefined) { opened.socket.destroy(); throw new Error(`CONNECT to ${host} succeeded`) }
      status = opened.status
      proxyStatus = opened.head
    }
    if (status !== wanted[0] || !proxyStatus.includes(`error=${wanted[1]}`)) {
      stats.violation('wrongOutcome', `${kind}: ${status} ${proxyStatus.slice(0, 200)}`)
    }
  }

  /** A client that leaves mid-transfer, or while its CONNECT waits for DNS. */
  async function clientVanishes (ctx) {
    const shape = randomInt(4)
    stats.fault('clientVanished')
    if (shape === 0) {
      const { response } = await forwardRequest(env.proxy.plainPort, env.agent, 'GET', `http://${web}/download?id=${newId()}&size=${4 * 1024 * 1024}`, ctx)
      stats.request('forward')
      await readAll(response, { limit: randomInt(1, 1024 * 1024) })
      response.destroy()
    } else if (shape === 1 || shape === 2) {
      const protocol = shape === 1 ? 'h1' : 'h2'
      const socket = await requireTunnel(protocol, tcp, ctx)
      const id = `${newId()}-${protocol}-vanishing`
      socket.write(`GET ${id} ${4 * 1024 * 1024}\n`)
      await readAll(socket, { limit: randomInt(1, 1024 * 1024), onData: () => env.touch(id) })
      socket.destroy()
    } else {
      const protocol = Math.random() < 0.5 ? 'h1' : 'h2'
      const pending = openTunnel(protocol, `slowdns-${newId()}.soak.test:${ports.tcp}`, ctx)
      pending.catch(() => {})
      await new Promise((resolve) => setTimeout(resolve, randomInt(5, 200)))
      ctx.destroyAll()
    }
  }

  /** A tunnel that goes silent: the proxy must close it within its idle timeout. */
  async function idleTunnel (ctx) {
    stats.fault('idleTunnel')
    const protocol = Math.random() < 0.5 ? 'h1' : 'h2'
    const socket = await requireTunnel(protocol, tcp, ctx)
    socket.write(`IDLE ${newId()}\n`)
    let last = Date.now()
    socket.on('data', () => { last = Date.now() })
    socket.resume()
    await new Promise((resolve) => { if (socket.destroyed) resolve(); else socket.once('close', resolve) })
    const silence = Date.now() - last
    stats.idleClosed(silence)
    if (silence > env.tunnelIdleTimeout + env.idleMargin) stats.violation('idleOverrun', `${protocol} tunnel closed ${silence} ms after its last byte`)
  }

  const slowClient = (ctx) => {
    stats.fault('slowClient')
    const pick = randomInt(3)
    return pick === 0 ? forwardDownload(ctx, { slow: true }) : tunnelDownload(ctx, pick === 1 ? 'h1' : 'h2', { slow: true })
  }

  return [
    ['forward-download', 4, forwardDownload],
    ['forward-upload', 3, forwardUpload],
    ['forward-sse', 1, forwardSse],
    ['intercepted-download', 3, interceptedDownload],
    ['intercepted-upload', 2, interceptedUpload],
    ['tunnel-h1-download', 2, (ctx) => tunnelDownload(ctx, 'h1')],
    ['tunnel-h1-upload', 2, (ctx) => tunnelUpload(ctx, 'h1')],
    ['tunnel-h2-download', 2, (ctx) => tunnelDownload(ctx, 'h2')],
    ['tunnel-h2-upload', 2, (ctx) => tunnelUpload(ctx, 'h2')],
    ['fault-forward-reset', 0.7, forwardReset],
    ['fault-intercepted-reset', 0.7, interceptedReset],
    ['fault-tunnel-h1-reset', 0.5, (ctx) => tunnelReset(ctx, 'h1')],
    ['fault-tunnel-h2-reset', 0.5, (ctx) => tunnelReset(ctx, 'h2')],
    ['fault-dns-nxdomain', 0.7, (ctx) => dnsFailure(ctx, 'dnsError')],
    ['fault-dns-timeout', 0.2, (ctx) => dnsFailure(ctx, 'dnsTimeout')],
    ['fault-slow-client', 0.7, slowClient],
    ['fault-client-vanishes', 1, clientVanishes],
    ['fault-idle-tunnel', 0.2, idleTunnel]
  ].map(([name, weight, run]) => ({ name, weight, run }))
}
