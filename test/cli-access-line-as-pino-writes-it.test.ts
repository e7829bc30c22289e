import { test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import { ProxyAgent, request } from 'undici'
import { listeningUrls, printed, runBin } from './helpers/cli-bin'
import { startOrigin } from './helpers/servers'
import { basic, openTunnel } from './helpers/raw-client'
import { proxyLoggerOptions } from './helpers/internals'
import { within } from './helpers/within'

interface AccessEntry { reqId: string, access: Record<string, unknown>, msg: string }

/** What the bin's logger (pino, with the bin's options) writes for `request.log.info({ access }, msg)`. */
async function pinoLine (entry: AccessEntry): Promise<string> {
  let written = ''
  let wrote: () => void = () => {}
  const arrived = new Promise<void>((resolve) => { wrote = resolve })
  const target = new Writable({
    write (chunk: Buffer, _encoding, callback) {
      written += chunk.toString()
      wrote()
      callback()
    }
  })
  const { accessLineWriter: _unused, ...options } = proxyLoggerOptions({ level: 'info', format: 'json' }, undefined, target)
  const app = Fastify(options)
  app.log.child({ reqId: entry.reqId }).info({ access: entry.access }, entry.msg)
  await within(arrived, 'the line pino wrote')
  await app.close()
  return written.trimEnd()
}

// The same line but for the process that wrote it and the moment it did.
const comparable = (line: string): string => line.replace(/"time":\d+/, '"time":0').replace(/"pid":\d+/, '"pid":0')

test('bin: each access line (forwarded, refused, failed, tunnel closed) is the line pino writes for the same entry, character for character', async (t) => {
  const origin = await startOrigin(t)
  const dir = t.testdir()
  const file = join(dir, 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    users: { alice: 'alice-password' },
    destinations: { allowedPorts: [origin.port, 1], allowedNetworks: ['127.0.0.0/8'] }
  }))
  const bin = runBin(t, ['--config', file])
  const [url = ''] = await listeningUrls(bin)
  const dispatcher = new ProxyAgent({ uri: url, proxyTunnel: false, token: basic('alice', 'alice-password') })
  t.teardown(() => dispatcher.close())
  const statuses: number[] = []
  for (const target of [`http://127.0.0.1:${origin.port}/ok`, 'http://127.0.0.1:2/refused-port', 'http://127.0.0.1:1/nothing-listens']) {
    const response = await request(target, { dispatcher })
    await response.body.dump()
    statuses.push(response.statusCode)
  }
  t.same(statuses, [200, 403, 502], 'forwarded, refused by the port policy, refused by the destination')
  const { port } = new URL(url)
  const tunnel = await openTunnel(Number(port), `127.0.0.1:${origin.port}`, { 'Proxy-Authorization': basic('alice', 'alice-password') })
  tunnel.socket.end()

  const lines = await printed(bin, /"access":/, 4)
  const entries = lines.map((line) => JSON.parse(line) as AccessEntry)
  t.same(entries.map((entry) => [entry.access.kind, entry.access.status]), [['forward', 200], ['forward', 403], ['forward', 502], ['tunnel', 200]])
  t.ok(entries.every((entry) => entry.access.user === 'alice'))
  t.match(entries[1]?.access, { decision: 'deny', reason: String })
  t.match(entries[2]?.access, { errorType: 'connection_refused', reason: String })
  for (const [index, line] of lines.entries()) {
    const entry = entries[index] as AccessEntry
    t.equal(comparable(line), comparable(await pinoLine(entry)), `${entry.msg}, ${String(entry.access.status)}`)
  }
})
