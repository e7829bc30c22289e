// The bin's http:// cost per request, before and after a change, with two clients: undici (a Pool
// of 32 keep-alive connections, absolute-form requests) and hey (32 connections) when installed.
// Each tree (a checkout with dist/ built) runs the bin with the minimal configuration (listen,
// one user, destinations allowing loopback) and the full one (plus interception of two other
// hosts and a header rule for them), at its default log level, in alternating rounds against
// bench/origin.mjs. Prints the medians of req/s and of the bin's CPU per request (user + system
// from /proc/PID/stat).
// `npm run build && node bench/bin-ab.mjs <tree-before> [<tree-after> = this checkout]`
// (BENCH_ROUNDS, default 3; BENCH_SECONDS, default 5)
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { makeCa } from './pki.mjs'
import { CONNECTIONS, cpuMicros, hey, heyLoad, median, startBin, undiciLoad } from './bin-load.mjs'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const here = resolve(import.meta.dirname, '..')
const trees = process.argv.length > 3 ? process.argv.slice(2, 4) : [process.argv[2], here]
if (trees[0] === undefined) throw new Error('usage: node bench/bin-ab.mjs <tree-before> [<tree-after>]')

const dir = mkdtempSync(join(tmpdir(), 'ffp-bin-ab-'))
const ca = makeCa(dir, 'operator')
const USER = 'bench'
const PASSWORD = 'bench-password'
const configs = {
  minimal: (port) => ({ listen: [{ host: '127.0.0.1', port }], users: { [USER]: PASSWORD }, destinations: { allowedNetworks: ['127.0.0.1/32'], allowedPorts: '*' } }),
  full: (port) => ({
    ...configs.minimal(port),
    interception: { hosts: ['a.example', 'b.example'], ca: { cert: ca.certPath, key: ca.keyPath }, trustedDestinationCa: ca.certPath },
    headers: [{ hosts: ['a.example', 'b.example'], set: { 'X-Team': 'bench' } }]
  })
}

const origin = spawn(process.execPath, [join(here, 'bench', 'origin.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] })
const originPort = Number(await new Promise((resolve) => origin.stdout.once('data', (chunk) => resolve(String(chunk).trim()))))

const target = `http://127.0.0.1:${originPort}/small`
const credentials = `${USER}:${PASSWORD}`

const results = {}
for (let round = 0; round < ROUNDS; round++) {
  for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
    for (const config of ['minimal', 'full']) {
      for (const [client, load] of [['undici', undiciLoad], ...(hey === undefined ? [] : [['hey', async (...args) => heyLoad(...args)]])]) {
        const { bin, port } = await startBin(tree, dir, configs[config])
        await load(port, target, credentials, 1)
        const before = cpuMicros(bin.pid)
        const started = Date.now()
        const answered = await load(port, target, credentials, SECONDS)
        const seconds = (Date.now() - started) / 1000
        const key = `${tree} | ${config} | ${client}`
        ;(results[key] ??= []).push({ reqPerSec: answered / seconds, cpuPerRequestUs: (cpuMicros(bin.pid) - before) / answered })
        bin.kill()
        await new Promise((resolve) => bin.once('exit', resolve))
      }
    }
  }
}
console.log('| tree | config | client | req/s | bin CPU µs per request | each round (µs) |\n|---|---|---|---|---|---|')
for (const [key, rounds] of Object.entries(results)) {
  console.log(`| ${key} | ${Math.round(median(rounds.map((r) => r.reqPerSec)))} | ${median(rounds.map((r) => r.cpuPerRequestUs)).toFixed(1)} | ${rounds.map((r) => r.cpuPerRequestUs.toFixed(1)).join(' / ')} |`)
}
console.log(`\n${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections, Node ${process.version}, origin bench/origin.mjs`)
origin.kill()
rmSync(dir, { recursive: true, force: true })
