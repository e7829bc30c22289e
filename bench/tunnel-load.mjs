// Tunnel load generator, run in its own process, for the HTTP/2 vs HTTP/1.1 CONNECT scenarios.
// Takes one JSON argument:
//   { scenario: 'open' | 'download' | 'upload', protocol: 'h1' | 'h1-plain' | 'h2',
//     proxyPort, destPort, duration (s), concurrency, ca (PEM path, for TLS),
//     sessions (h2: sessions the streams are spread over, default 1),
//     streamWindow, connectionWindow (h2: receive windows this client advertises, default Node's),
//     resume (h1: reuse the TLS session of an earlier tunnel) }
// Protocols: 'h1' is tls.connect with ALPN http/1.1 then a raw CONNECT head, one TLS connection
// per tunnel; 'h1-plain' the same in clear text (for the plain proxy); 'h2' is one CONNECT stream
// per tunnel on long-lived HTTP/2 sessions. Scenarios, each kept at `concurrency` tunnels for
// `duration` seconds after a 1 s warm-up:
// - open: open a tunnel to the echo destination, send 16 bytes, read them back, close both ways
//   and wait for the close; reports tunnels/s and p99 of open -> echoed bytes back;
// - download: open a tunnel to the blast destination and read its 64 MiB to the end, again;
// - upload: open a tunnel to the sink destination, write 64 MiB and end, again; bytes count when
//   the destination acknowledges them (one byte per MiB).
// Prints { tunnelsPerSec, p99, mbPerSec, errors, ... } as JSON.
import { readFileSync } from 'node:fs'
import { connect as http2Connect } from 'node:http2'
import { connect as netConnect } from 'node:net'
import { performance } from 'node:perf_hooks'
import { connect as tlsConnect } from 'node:tls'
import { readConnectResponse } from './connect-response.mjs'
import { quantileOfSorted } from './compare/report.mjs'
import { drainedOrClosed } from './stream-events.mjs'

const config = JSON.parse(process.argv[2])
const { scenario, protocol, proxyPort, destPort } = config
const concurrency = Number(config.concurrency)
const duration = Number(config.duration) * 1000
const ca = config.ca ? readFileSync(config.ca) : undefined
const authority = `127.0.0.1:${destPort}`
const MiB = 1024 * 1024
const ping = Buffer.from('0123456789abcdef')
const chunk = Buffer.alloc(MiB, 'u')
const uploadChunks = 64

let tlsSession
async function openHttp1 () {
  const socket = protocol === 'h1-plain'
    ? netConnect(proxyPort, '127.0.0.1')
    : tlsConnect({ host: '127.0.0.1', port: proxyPort, ca, ALPNProtocols: ['http/1.1'], session: config.resume ? tlsSession : undefined })
  socket.setNoDelay(true)
  if (config.resume) socket.once('session', (session) => { tlsSession = session })
  if (protocol === 'h1') socket.once('secureConnect', () => { if (measuring && socket.isSessionReused()) resumed++ })
  socket.once(protocol === 'h1-plain' ? 'connect' : 'secureConnect', () => {
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`)
  })
  const { status, head } = await readConnectResponse(socket)
  if (status !== 200) {
    socket.destroy()
    throw new Error(`CONNECT refused: ${head.slice(0, 40)}`)
  }
  return socket
}

const sessions = []
async function startSessions () {
  const count = Math.max(1, Number(config.sessions ?? 1))
  for (let i = 0; i < count; i++) {
    const settings = config.streamWindow ? { initialWindowSize: Number(config.streamWindow) } : {}
    const session = http2Connect(`https://127.0.0.1:${proxyPort}`, { ca, settings })
    session.on('error', () => {})
    await new Promise((resolve, reject) => { session.once('connect', resolve); session.once('error', reject) })
    if (config.connectionWindow) session.setLocalWindowSize(Number(config.connectionWindow))
    sessions.push(session)
  }
}

function openHttp2 (worker) {
  const session = sessions[worker % sessions.length]
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': 'CONNECT', ':authority': authority })
    stream.on('error', () => {})
    stream.once('response', (head) => {
      if (head[':status'] === 200) return resolve(stream)
      stream.destroy()
      reject(new Error(`CONNECT refused: ${head[':status']}`))
    })
    stream.once('close', () => reject(new Error(`stream closed before a response (code ${stream.rstCode})`)))
  })
}

const open = protocol === 'h2' ? openHttp2 : openHttp1

/** Resolves when the tunnel is closed; rejects if it was torn down before both sides ended. */
function closed (tunnel) {
  const done = new Promise((resolve, reject) => {
    if (tunnel.destroyed && tunnel.readableEnded) return resolve()
    let ended = tunnel.readableEnded
    tunnel.once('end', () => { ended = true })
    tunnel.once('close', () => (ended ? resolve() : reject(new Error('tunnel aborted'))))
  })
  done.catch(() => {}) // awaited later, or not at all when the round already failed
  return done
}

const active = new Set()
const latencies = []
let tunnels = 0
let bytes = 0
let errors = 0
let resumed = 0
let measuring = false
let measureStart = 0
let measureEnd = 0
let stopping = false

async function openRound (worker) {
  const started = performance.now()
  const tunnel = await open(worker)
  active.add(tunnel)
  try {
    const done = closed(tunnel)
    tunnel.write(ping)
    let received = 0
    await new Promise((resolve, reject) => {
      const onData = (data) => {
        received += data.length
        if (received < ping.length) return
        tunnel.removeListener('data', onData)
        resolve()
      }
      tunnel.on('data', onData)
      tunnel.once('close', () => reject(new Error('closed before the echo')))
      tunnel.resume()
    })
    const roundTrip = performance.now() - started
    tunnel.end()
    tunnel.resume()
    await done
    if (measuring) { tunnels++; latencies.push(roundTrip) }
  } finally {
    active.delete(tunnel)
  }
}

async function downloadRound (worker) {
  const tunnel = await open(worker)
  active.add(tunnel)
  try {
    const done = closed(tunnel)
    tunnel.on('data', (data) => { if (measuring) bytes += data.length })
    tunnel.once('end', () => tunnel.end())
    tunnel.resume()
    await done
    if (measuring) tunnels++
  } finally {
    active.delete(tunnel)
  }
}

async function uploadRound (worker) {
  const tunnel = await open(worker)
  active.add(tunnel)
  try {
    const done = closed(tunnel)
    tunnel.on('data', (data) => { if (measuring) bytes += data.length * MiB })
    tunnel.resume()
    for (let i = 0; i < uploadChunks && !tunnel.destroyed && !stopping; i++) {
      if (!tunnel.write(chunk)) await drainedOrClosed(tunnel)
    }
    tunnel.end()
    await done
    if (measuring) tunnels++
  } finally {
    active.delete(tunnel)
  }
}

const round = { open: openRound, download: downloadRound, upload: uploadRound }[scenario]
if (round === undefined) throw new Error(`unknown scenario ${scenario}`)
if (protocol === 'h2') await startSessions()

const startedAt = performance.now()
setTimeout(() => { measuring = true; measureStart = performance.now() }, 1000)
setTimeout(() => {
  measuring = false
  stopping = true
  measureEnd = performance.now()
  for (const tunnel of active) tunnel.destroy()
}, 1000 + duration)

async function worker (index) {
  while (!stopping) {
    try {
      await round(index)
    } catch {
      if (!stopping) errors++
    }
  }
}
await Promise.all(Array.from({ length: concurrency }, (_, index) => worker(index)))
const seconds = (measureEnd - measureStart) / 1000
latencies.sort((a, b) => a - b)
const p99 = quantileOfSorted(latencies, 0.99) ?? 0
process.stdout.write(JSON.stringify({
  scenario,
  protocol,
  concurrency,
  tunnels,
  tunnelsPerSec: tunnels / seconds,
  p99,
  mbPerSec: bytes / MiB / seconds,
  errors,
  ...(protocol === 'h1' ? { resumedTlsSessions: resumed } : {}),
  seconds,
  wallSeconds: (performance.now() - startedAt) / 1000
}) + '\n')
for (const session of sessions) session.destroy()
process.exit(0)
