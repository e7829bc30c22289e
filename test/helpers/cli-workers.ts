import { readFileSync, writeFileSync } from 'node:fs'
import { get } from 'node:http'
import { join } from 'node:path'
import type { Test } from 'tap'
import { listeningUrls, runBin, type BinProcess } from './cli-bin'

/** The pids of the processes `pid` forked (Linux). */
export function childPids (pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
}

/**
 * Spawns the bin with `"workers": 2` on 127.0.0.1:0, loopback destinations allowed, log level
 * warn, started with the Node options `nodeArgs`; resolves once it names its listener.
 */
export async function startTwoWorkerBin (t: Test, nodeArgs: string[] = []): Promise<{ bin: BinProcess, url: string | undefined }> {
  const file = join(t.testdir(), 'proxy.json')
  writeFileSync(file, JSON.stringify({
    listen: [{ host: '127.0.0.1', port: 0 }],
    workers: 2,
    destinations: { allowedPorts: '*', allowedNetworks: ['127.0.0.1/32'] },
    log: { level: 'warn' }
  }))
  const bin = runBin(t, ['--config', file], {}, nodeArgs)
  const [url] = await listeningUrls(bin)
  return { bin, url }
}

/** An absolute-form GET through the proxy on a new connection; resolves with status, Via and body. */
export function getThroughProxy (proxy: URL, target: string): Promise<{ status: number, via: string | undefined, body: string }> {
  return new Promise((resolve, reject) => {
    get({ host: proxy.hostname, port: proxy.port, path: target, agent: false }, (res) => {
      let body = ''
      res.on('data', (chunk: Buffer) => { body += chunk.toString() })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, via: res.headers.via, body }))
    }).on('error', reject)
  })
}
