// The proxy's CPU per CONNECT, ours against Squid (where installed) in the same run: 32 clients
// open a connection, send CONNECT to nginx's plain port, read the 200 and close, for 4 s, two
// rounds (the first is the cold start). `node bench/connect-cost.mjs` after `npm run build`.
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeCa, makeLeaf } from './pki.mjs'
import { startOrigin, PLAIN_HOST, TLS_HOST } from './compare/origin.mjs'
import { PEERS, startPeer } from './compare/peers.mjs'
import { cpuSeconds, stopProcess } from './compare/processes.mjs'
import { detectTools } from './compare/tools.mjs'

const SECONDS = Number(process.env.CONNECT_COST_SECONDS ?? 4)
const PARALLEL = 32

/** Opens CONNECT tunnels to `target` through `port` as fast as `PARALLEL` clients can; resolves with how many got 200. */
async function openAndClose (port, target) {
  let done = 0
  const end = Date.now() + SECONDS * 1000
  const one = () => new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`))
    let head = ''
    socket.on('data', (chunk) => {
      head += chunk
      if (!head.includes('\r\n\r\n')) return
      if (head.startsWith('HTTP/1.1 200')) done++
      socket.destroy()
    })
    socket.on('error', () => {})
    socket.on('close', resolve)
  })
  await Promise.all(Array.from({ length: PARALLEL }, async () => { while (Date.now() < end) await one() }))
  return done
}

const directory = mkdtempSync(join(tmpdir(), 'ffp-connect-cost-'))
const processes = []
try {
  const destinationCa = makeCa(directory, 'destination-ca')
  const operatorCa = makeCa(directory, 'operator-ca')
  const pki = { destinationCa, operatorCa, origin: makeLeaf(directory, 'origin', destinationCa, [TLS_HOST, PLAIN_HOST]), proxy: makeLeaf(directory, 'proxy', destinationCa, [PLAIN_HOST]) }
  const tools = detectTools().found
  const origin = await startOrigin(tools.nginx, directory, pki.origin)
  processes.push(...origin.processes)
  const context = { directory, pki, tools, maxTunnels: 20_000, nodeArgs: [] }
  const running = []
  for (const peer of PEERS.filter((p) => p.name !== 'mitmproxy' && p.name !== 'chained' && p.needs.every((tool) => tools[tool] !== undefined))) {
    const started = await startPeer(peer, context)
    processes.push(started.started)
    running.push(started)
  }
  for (let round = 1; round <= 2; round++) {
    for (const { peer, port, pid } of running) {
      const before = cpuSeconds(pid)
      const done = await openAndClose(port, `${PLAIN_HOST}:${origin.httpPort}`)
      const cpu = cpuSeconds(pid) - before
      console.log(`round ${round} ${peer.label}: ${Math.round(done / SECONDS)} CONNECT/s, ${(cpu / done * 1e6).toFixed(0)} µs CPU per CONNECT (open, 200, close)`)
    }
  }
} finally {
  for (const started of processes.reverse()) await stopProcess(started)
  rmSync(directory, { recursive: true, force: true })
}
