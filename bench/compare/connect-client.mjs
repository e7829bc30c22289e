// The CONNECT-cost client, in its own process: `parallel` clients each open a connection to the
// proxy, send `CONNECT target` (with Proxy-Authorization when `authorization` is given), read
// the answer's head and close, again and again for `seconds`. Argument: JSON { proxyPort,
// target, seconds, parallel, authorization? }. Prints { answered, refused, errors, firstError,
// seconds }: answered are the 200s, refused the other statuses, errors the connections that
// failed or closed before an answer. Used by bench/connect-cost.mjs and the per-request suite
// (bench/compare/per-request.mjs) through `connectLoad`.
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import { runJsonChild } from './extras.mjs'

/** Runs this client in a child process and resolves with its result. */
export function connectLoad ({ proxyPort, target, seconds, parallel = 32, authorization }) {
  return runJsonChild(fileURLToPath(import.meta.url), { proxyPort, target, seconds, parallel, authorization }, (seconds + 60) * 1000)
}

async function main ({ proxyPort, target, seconds, parallel, authorization }) {
  const request = `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${authorization === undefined ? '' : `Proxy-Authorization: ${authorization}\r\n`}\r\n`
  let answered = 0
  let refused = 0
  let errors = 0
  let firstError
  const started = Date.now()
  const end = started + seconds * 1000
  const one = () => new Promise((resolve) => {
    let head = ''
    let settled = false
    const socket = connect(proxyPort, '127.0.0.1', () => socket.write(request))
    socket.on('data', (chunk) => {
      head += chunk.toString('latin1')
      if (settled || !head.includes('\r\n\r\n')) return
      settled = true
      if (head.startsWith('HTTP/1.1 200')) answered++
      else {
        refused++
        firstError ??= head.split('\r\n')[0]
      }
      socket.destroy()
    })
    socket.on('error', (error) => { firstError ??= error.message })
    socket.on('close', () => {
      if (!settled) {
        errors++
        firstError ??= 'closed before an answer'
      }
      resolve()
    })
  })
  await Promise.all(Array.from({ length: parallel }, async () => { while (Date.now() < end) await one() }))
  return { answered, refused, errors, firstError, seconds: (Date.now() - started) / 1000 }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] !== undefined) {
  process.stdout.write(JSON.stringify(await main(JSON.parse(process.argv[2]))) + '\n')
}
