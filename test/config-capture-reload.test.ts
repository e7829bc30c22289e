import { test, type Test } from 'tap'
import Fastify from 'fastify'
import cluster from 'node:cluster'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ForwardProxyOptions } from '../types/options'
import { loadConfigFile, parseConfig, type RunningProxyServer, splitRestartKeys, watchConfiguration } from './helpers/internals'
import { startConfiguredServer } from './helpers/cli-server'
import { capturedLog } from './helpers/captured-log'

const base = { listen: [{ host: '127.0.0.1', port: 0 }], users: { alice: 'pw-a', bob: 'pw-b' } }

/**
 * Starts the server without capture and records the options each reconfiguration hands the
 * plugin, without applying them (the plugin's capture is not what is tested here).
 */
async function serverRecordingReconfigure (
  t: Test,
  value: object,
  dir: string
): Promise<{ reconfigured: ForwardProxyOptions[], server: RunningProxyServer }> {
  const server = await startConfiguredServer(t, value, dir)
  const reconfigured: ForwardProxyOptions[] = []
  server.app.forwardProxy.reconfigure = (options) => { reconfigured.push(options) }
  return { reconfigured, server }
}

test('config capture reload: turning capture on, changing its filters and turning it off apply at once, never restart-only', async (t) => {
  const parse = (value: object): ReturnType<typeof parseConfig> => parseConfig({ ...base, ...value }, 'proxy.json', '/etc/proxy')
  const off = parse({})
  const on = parse({ capture: { file: 'traffic.har' } })
  const narrowed = parse({ capture: { file: 'other.har', hosts: ['*.example.com'], users: ['bob'], maxBodyBytes: 0, keepFiles: 1 } })
  for (const [from, to, what] of [[off, on, 'on'], [on, narrowed, 'filters changed'], [narrowed, off, 'off']] as const) {
    const { effective, restartNeeded } = splitRestartKeys(from, to)
    t.same(restartNeeded, [], `${what}: no restart needed`)
    t.same(effective.capture, to.capture, `${what}: the new capture is the one applied`)
  }
})

test('config capture reload: a reload hands the plugin the new capture, its file resolved against the file\'s folder; a capture naming an unknown user changes nothing', async (t) => {
  const dir = t.testdir()
  mkdirSync(join(dir, 'captures'))
  const file = join(dir, 'proxy.json')
  const write = (value: object): void => writeFileSync(file, JSON.stringify({ ...base, ...value }))
  write({})
  const { reconfigured, server } = await serverRecordingReconfigure(t, loadConfigFile(file), dir)
  const log = capturedLog()
  const stop = watchConfiguration({ path: file, read: () => loadConfigFile(file) }, server.reload, Fastify({ logger: log.logger }).log)
  t.teardown(stop)
  const reload = (value: object): ForwardProxyOptions | undefined => {
    write(value)
    process.emit('SIGHUP', 'SIGHUP')
    return reconfigured.at(-1)
  }

  t.same(reload({ capture: { file: 'captures/traffic.har', hosts: ['api.example.com'] } })?.capture, { file: join(dir, 'captures', 'traffic.har'), hosts: ['api.example.com'], redactHeaders: ['authorization', 'cookie', 'set-cookie'] }, 'turned on')
  t.same(reload({ capture: { file: '/var/tmp/t.har', users: ['bob'], redactHeaders: ['x-token'] } })?.capture, { file: '/var/tmp/t.har', users: ['bob'], redactHeaders: ['x-token'] }, 'filters changed')
  t.same(server.reload.current().capture, { file: '/var/tmp/t.har', users: ['bob'], redactHeaders: ['x-token'] }, 'and in force')
  const calls = reconfigured.length
  reload({ users: { alice: 'pw-a' }, capture: { file: 't.har', users: ['bob'] } })
  t.equal(reconfigured.length, calls, 'a file whose capture names a user it does not define reconfigures nothing')
  t.match(log.lines().at(-1), `configuration reload failed, the previous configuration stays: ${file}: /capture/users/0 names the user \\"bob\\", which /users does not define`)
  t.same(server.reload.current().capture?.users, ['bob'], 'the capture in force stays')
  const last = reload({})
  t.equal(reconfigured.length, calls + 1)
  t.notOk(last !== undefined && 'capture' in last, 'turned off: no capture option at all')
  t.same(log.lines().filter((line) => line.includes('restart the proxy')), [], 'never a key that needs a restart')
})

test('config capture reload: with workers above 1 each worker hands the plugin its own file (.worker-N, N its cluster id); with one worker the file as written', async (t) => {
  // What cluster.worker holds in a forked worker of runWorkers, in this process for the test.
  Object.defineProperty(cluster, 'worker', { value: { id: 3 }, configurable: true })
  t.teardown(() => { Reflect.deleteProperty(cluster, 'worker') })
  for (const [workers, expected] of [[2, '/srv/proxy/traffic.worker-3.har'], [1, '/srv/proxy/traffic.har']] as const) {
    const { reconfigured, server } = await serverRecordingReconfigure(t, { ...base, workers }, '/srv/proxy')
    server.reload.apply(parseConfig({ ...base, workers, capture: { file: 'traffic.har', hosts: ['*'] } }, 'proxy.json', '/srv/proxy'))
    t.same(reconfigured.map((options) => options.capture), [{ file: expected, hosts: ['*'], redactHeaders: ['authorization', 'cookie', 'set-cookie'] }], `workers ${workers}`)
    t.equal(server.reload.current().capture?.file, '/srv/proxy/traffic.har', 'the configuration keeps the file as written')
  }
})
