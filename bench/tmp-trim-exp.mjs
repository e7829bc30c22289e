import { execFileSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeCa, makeLeaf } from './pki.mjs'
import { runLoad } from './compare/load-scenarios.mjs'
import { PLAIN_HOST, startOrigin, TLS_HOST } from './compare/origin.mjs'
import { startOurs } from './compare/peers.mjs'
import { memoryMiB, statusKiB, stopProcess } from './compare/processes.mjs'
import { detectTools } from './compare/tools.mjs'
const tools = detectTools()
const directory = mkdtempSync(join(tmpdir(), 'ffp-trim-'))
const destinationCa = makeCa(directory, 'destination-ca')
const operatorCa = makeCa(directory, 'operator-ca')
const pki = { destinationCa, operatorCa, origin: makeLeaf(directory, 'origin', destinationCa, [TLS_HOST, PLAIN_HOST]) }
const origin = await startOrigin(tools.found.nginx, directory, pki.origin)
const settings = { duration: 3, connections: 32, warmupMs: 1, heyPath: tools.found.hey }
const proxy = await startOurs({ directory, pki, maxTunnels: 20000, nodeArgs: (process.env.ARGS || '').split(' ').filter(Boolean) })
const show = (label) => console.log(label, JSON.stringify(memoryMiB(proxy.pid)), 'anon', Math.round(statusKiB(proxy.pid, 'RssAnon') / 1024))
show('idle')
for (const s of (process.env.SCEN || 'http,intercept,intercept-new,download,download-intercept').split(',')) { await runLoad(s, origin, pki, settings, proxy.port); show(s) }
execFileSync('gdb', ['-p', String(proxy.pid), '-batch', '-ex', 'call (int) malloc_trim(0)'], { stdio: 'ignore' })
show('after malloc_trim')
await stopProcess(proxy.started)
for (const p of origin.processes) await stopProcess(p)
