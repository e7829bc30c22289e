import { test } from 'tap'
import { execFile } from 'node:child_process'
import { connect } from 'node:net'
import { promisify } from 'node:util'
import { startProxy } from './helpers/servers'
import { eventually } from './helpers/eventually'
import { blackHoledPort } from './helpers/black-holed-port'
import { capturedLog } from './helpers/captured-log'

/** Sockets on this machine still trying to connect (SYN-SENT) to 127.0.0.1:`port`, per `ss`. */
async function synSentTo (port: number): Promise<number> {
  const { stdout } = await promisify(execFile)('ss', ['-Htn', 'state', 'syn-sent', 'dst', `127.0.0.1:${port}`])
  return stdout.split('\n').filter((line) => line.trim() !== '').length
}

test('a client that leaves while the proxy is dialing a black-holed destination: the dial is abandoned, the slot released, and the CONNECT logged as abandoned (499 client-gone), not as a 502', async (t) => {
  const port = await blackHoledPort(t)
  await eventually(async () => await synSentTo(port) >= 1)
  const baseline = await synSentTo(port)

  const log = capturedLog()
  const proxy = await startProxy(t, {}, undefined, { logger: log.logger }) // default connectTimeout: 10 s
  const client = connect(proxy.port, '127.0.0.1', () => client.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: x\r\n\r\n`))
  client.on('error', () => {})
  t.teardown(() => client.destroy())
  await eventually(async () => await synSentTo(port) === baseline + 1)
  t.equal(proxy.app.forwardProxy.activeTunnels, 1, 'the proxy is dialing')

  client.resetAndDestroy()
  await eventually(async () => proxy.app.forwardProxy.activeTunnels === 0 && await synSentTo(port) === baseline)
  t.equal(proxy.app.forwardProxy.activeTunnels, 0, 'slot released long before connectTimeout')
  t.equal(await synSentTo(port), baseline, 'the proxy\'s half-open dial was destroyed')
  await eventually(() => log.access().length === 1)
  t.match(log.access()[0], { kind: 'connect', status: 499, closeReason: 'client-gone', errorType: null })
  t.notOk(log.lines().some((line) => line.includes('"status":502')), 'nothing claims a 502 was sent')
})
