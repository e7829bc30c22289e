// SSE first-byte latency: `samples` GET /sse one after the other, direct or as absolute-form
// requests through a proxy (http:// forwarding), each timed from the request to the first body
// byte, then closed. Argument: JSON { originPort, proxyPort?, samples }. Prints
// { samples, errors, firstError, p50, p99 } in ms.
import { connect } from 'node:net'
import { quantileOfSorted } from './report.mjs'

const { originPort, proxyPort, samples } = JSON.parse(process.argv[2])
const target = proxyPort === undefined ? '/sse' : `http://127.0.0.1:${originPort}/sse`

function firstByte () {
  return new Promise((resolve, reject) => {
    const begin = performance.now()
    const socket = connect(proxyPort ?? originPort, '127.0.0.1', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${originPort}\r\nAccept: text/event-stream\r\n\r\n`))
    let received = ''
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1')
      const end = received.indexOf('\r\n\r\n')
      if (end === -1) return
      if (!received.startsWith('HTTP/1.1 200')) { socket.destroy(); return reject(new Error(received.split('\r\n')[0])) }
      if (!received.slice(end + 4).includes('data: first')) return
      const elapsed = performance.now() - begin
      socket.destroy()
      resolve(elapsed)
    })
    socket.once('error', reject)
    socket.once('end', () => reject(new Error('closed before the first event')))
  })
}

const latencies = []
const failures = []
for (let i = 0; i < samples; i++) {
  try { latencies.push(await firstByte()) } catch (error) { failures.push(error) }
}
latencies.sort((a, b) => a - b)
const quantile = (q) => quantileOfSorted(latencies, q) ?? 0
process.stdout.write(JSON.stringify({ samples: latencies.length, errors: failures.length, firstError: failures[0]?.message, p50: quantile(0.5), p99: quantile(0.99) }) + '\n')
