import { test } from 'tap'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { captureFileOfWorker, loadConfigFile, parseConfig, startupSummary } from './helpers/internals'

const parse = (value: unknown): unknown => parseConfig(value, 'proxy.json', '/srv')
const HEADER_NAMES = '(letters, digits and ! # $ % & \' * + - . ^ _ ` | ~)'

test('config capture: each bad value is refused naming its key and what is expected', async (t) => {
  const users = { alice: 's3cret', bob: { password: 'pw' } }
  const refused: Array<[unknown, string]> = [
    [{ capture: 'traffic.har' }, '/capture must be an object'],
    [{ capture: {} }, '/capture: missing required key "file" (the HAR file the entries are written to; the server has no other place to send them)'],
    [{ capture: { hosts: ['example.com'] } }, '/capture: missing required key "file" (the HAR file the entries are written to; the server has no other place to send them)'],
    [{ capture: { file: '' } }, '/capture/file must be a non-empty string'],
    [{ capture: { file: 'traffic.har', fiel: 'x.har' } }, '/capture: unknown key "fiel" (did you mean "file"?)'],
    [{ capture: { file: 'traffic.har', keepFile: 3 } }, '/capture: unknown key "keepFile" (did you mean "keepFiles"?)'],
    [{ capture: { file: 'traffic.har', format: 'har' } }, '/capture: unknown key "format"'],
    [{ capture: { file: 'traffic.har', maxBodyBytes: -1 } }, '/capture/maxBodyBytes must be an integer of at least 0'],
    [{ capture: { file: 'traffic.har', maxBodyBytes: 1.5 } }, '/capture/maxBodyBytes must be an integer of at least 0'],
    [{ capture: { file: 'traffic.har', maxBodyBytes: '64k' } }, '/capture/maxBodyBytes must be an integer of at least 0'],
    [{ capture: { file: 'traffic.har', maxFileBytes: 1023 } }, '/capture/maxFileBytes must be an integer of at least 1024'],
    [{ capture: { file: 'traffic.har', keepFiles: 1001 } }, '/capture/keepFiles must be an integer from 0 to 1000'],
    [{ capture: { file: 'traffic.har', keepFiles: -1 } }, '/capture/keepFiles must be an integer from 0 to 1000'],
    [{ capture: { file: 'traffic.har', hosts: [] } }, '/capture/hosts must list at least 1 item'],
    [{ capture: { file: 'traffic.har', hosts: 'example.com' } }, '/capture/hosts must be an array of non-empty strings'],
    [{ capture: { file: 'traffic.har', hosts: ['example.com', 'exa mple.com'] } }, '/capture/hosts/1 must be a host pattern: example.com, *.example.com, *, an IP literal or a CIDR range (got "exa mple.com")'],
    [{ capture: { file: 'traffic.har', hosts: ['*.'] } }, '/capture/hosts/0 must be a host pattern: example.com, *.example.com, *, an IP literal or a CIDR range (got "*.")'],
    [{ capture: { file: 'traffic.har', hosts: ['https://api.example.com'] } }, '/capture/hosts/0 must be a host pattern: example.com, *.example.com, *, an IP literal or a CIDR range (got "https://api.example.com")'],
    [{ capture: { file: 'traffic.har', hosts: ['10.0.0.0/33'] } }, '/capture/hosts/0 must be a host pattern: example.com, *.example.com, *, an IP literal or a CIDR range (got "10.0.0.0/33")'],
    [{ users, capture: { file: 'traffic.har', users: [] } }, '/capture/users must list at least 1 item'],
    [{ users, capture: { file: 'traffic.har', users: ['alice', 'carol'] } }, '/capture/users/1 names the user "carol", which /users does not define'],
    [{ users, capture: { file: 'traffic.har', users: ['toString'] } }, '/capture/users/0 names the user "toString", which /users does not define'],
    [{ capture: { file: 'traffic.har', users: ['alice'] } }, '/capture/users/0 names the user "alice", which /users does not define'],
    [{ capture: { file: 'traffic.har', redactHeaders: 'cookie' } }, `/capture/redactHeaders must be an array of header names ${HEADER_NAMES}`],
    [{ capture: { file: 'traffic.har', redactHeaders: ['cookie', 'x token'] } }, `/capture/redactHeaders/1 must be a header name ${HEADER_NAMES}`],
    [{ capture: { file: 'traffic.har', redactHeaders: ['x-token:'] } }, `/capture/redactHeaders/0 must be a header name ${HEADER_NAMES}`]
  ]
  for (const [value, message] of refused) {
    t.throws(() => parse(value), { name: 'ConfigError', code: 'FFP_ERR_INVALID_CONFIG', message: `proxy.json: ${message}` }, JSON.stringify(value))
  }
})

test('config capture: a full capture key is accepted as written, its file resolved, nothing added', async (t) => {
  const capture = {
    file: 'traffic.har',
    hosts: ['api.example.com', '*.example.org', '*', '127.0.0.1', '10.0.0.0/8'],
    users: ['alice'],
    maxBodyBytes: 0,
    maxFileBytes: 1024,
    keepFiles: 0,
    redactHeaders: ['X-Api-Key', 'cookie']
  }
  const config = parseConfig({ users: { alice: 's3cret' }, capture }, 'proxy.json', '/srv/proxy')
  t.same(config.capture, { ...capture, file: '/srv/proxy/traffic.har' })
  t.same(parseConfig({ capture: { file: 'x.har', keepFiles: 1000 } }, 'proxy.json', '/srv').capture, { file: '/srv/x.har', keepFiles: 1000 }, 'defaults are the plugin\'s, not written in')
  t.equal(parseConfig({}, 'proxy.json', '/srv').capture, undefined, 'no key, no capture')
})

test('config capture: the file is resolved against the configuration file\'s folder, not the working directory', async (t) => {
  const dir = t.testdir()
  const folder = join(dir, 'etc', 'proxy')
  mkdirSync(folder, { recursive: true })
  mkdirSync(join(dir, 'var', 'capture'), { recursive: true })
  const write = (name: string, file: string): string => {
    const path = join(folder, name)
    writeFileSync(path, JSON.stringify({ capture: { file } }))
    return path
  }
  t.equal(loadConfigFile(write('a.json', 'traffic.har')).capture?.file, join(folder, 'traffic.har'))
  t.equal(loadConfigFile(write('b.json', '../../var/capture/traffic.har')).capture?.file, join(dir, 'var', 'capture', 'traffic.har'))
  t.equal(loadConfigFile(write('c.json', '/var/log/proxy.har')).capture?.file, '/var/log/proxy.har', 'an absolute path stays')
  const cwd = process.cwd()
  t.teardown(() => process.chdir(cwd))
  process.chdir(dir)
  t.equal(loadConfigFile(join('etc', 'proxy', 'a.json')).capture?.file, join(folder, 'traffic.har'), 'a relative --config path: still the file\'s folder')
})

test('config capture: a file in a folder that does not exist is refused when the configuration is read, naming the folder, rather than a server that records nothing', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'proxy.json')
  writeFileSync(path, JSON.stringify({ capture: { file: 'captures/traffic.har' } }))
  t.throws(() => loadConfigFile(path), { name: 'ConfigError', message: `${path}: /capture/file: the folder ${join(dir, 'captures')} does not exist; create it (the file itself is created, with mode 0600)` })
  writeFileSync(join(dir, 'captures'), 'a file, not a folder')
  t.throws(() => loadConfigFile(path), { message: /\/capture\/file: the folder .* does not exist/ }, 'a file where the folder should be')
})

test('config capture: the start-up summary has one capture line: file, filters, bodies, rotation', async (t) => {
  const urls = ['http://127.0.0.1:8080']
  const captureLines = (value: object): string[] => startupSummary(parseConfig(value, 'proxy.json', '/srv'), urls).filter((line) => line.startsWith('  capture:'))
  const users = { alice: 's3cret', bob: 'pw' }
  t.same(captureLines({ users, capture: { file: 'traffic.har', hosts: ['a', 'b'], users: ['alice'] } }), [
    '  capture: /srv/traffic.har (hosts a, b; users alice; bodies up to 65536 bytes; rotated at 104857600 bytes, 5 kept)'
  ])
  t.same(captureLines({ users, capture: { file: 'traffic.har' } }), [
    '  capture: /srv/traffic.har (every host; every user; bodies up to 65536 bytes; rotated at 104857600 bytes, 5 kept)'
  ])
  t.same(captureLines({ capture: { file: '/var/t.har', maxBodyBytes: 0, maxFileBytes: 2048, keepFiles: 0, redactHeaders: ['x-token', 'cookie'] } }), [
    '  capture: /var/t.har (every host; heads only, no bodies; rotated at 2048 bytes, 0 kept; redacted headers x-token, cookie)'
  ], 'without users no user filter is shown; values given replace the defaults')
  t.same(captureLines({ capture: { file: 't.har', maxBodyBytes: 10, redactHeaders: [] } }), [
    '  capture: /srv/t.har (every host; bodies up to 10 bytes; rotated at 104857600 bytes, 5 kept; no headers redacted)'
  ])
  t.same(captureLines({ workers: 3, capture: { file: 'traffic.har', hosts: ['a'] } }), [
    '  capture: /srv/traffic.worker-N.har (one file per worker, N its cluster id; hosts a; bodies up to 65536 bytes; rotated at 104857600 bytes, 5 kept)'
  ])
  t.same(captureLines({}), [], 'no capture key, no line')
  const summary = startupSummary(parseConfig({ capture: { file: 'traffic.har' } }, 'proxy.json', '/srv'), urls)
  t.ok(summary.indexOf('  capture: /srv/traffic.har (every host; bodies up to 65536 bytes; rotated at 104857600 bytes, 5 kept)') < summary.indexOf('  health check: GET /healthz on every listener'), 'before the health check line')
})

test('config capture: each worker\'s file has .worker-N before .har, or at the end of a name without .har', async (t) => {
  t.equal(captureFileOfWorker('/srv/traffic.har', 2), '/srv/traffic.worker-2.har')
  t.equal(captureFileOfWorker('/srv/TRAFFIC.HAR', 12), '/srv/TRAFFIC.worker-12.HAR', 'the extension in any case, kept as written')
  t.equal(captureFileOfWorker('/srv/traffic', 2), '/srv/traffic.worker-2')
  t.equal(captureFileOfWorker('/srv/traffic.json', 2), '/srv/traffic.json.worker-2', 'another extension is not .har: appended')
  t.equal(captureFileOfWorker('/srv/logs.d/traffic', 1), '/srv/logs.d/traffic.worker-1', 'a dot in a folder is no extension')
  t.equal(captureFileOfWorker('/srv/a.har.har', 3), '/srv/a.har.worker-3.har', 'only the last extension')
  t.not(captureFileOfWorker('/srv/traffic.har', 1), captureFileOfWorker('/srv/traffic.har', 2), 'two workers, two files')
})
