import { test } from 'tap'
import { connect } from 'node:net'
import { startOrigin, startProxy } from './helpers/servers'
import { basic } from './helpers/raw-client'

const PIPELINED = 200
const RIGHT_AT = 151

/** Sends `heads` in one write on one connection; resolves with every response status, in order. */
function pipeline (port: number, heads: string[]): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(heads.join('')))
    let text = ''
    const statuses = (): number[] => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
      if (statuses().length === heads.length) { socket.destroy(); resolve(statuses()) }
    })
    socket.on('close', () => resolve(statuses()))
    socket.on('error', reject)
  })
}

test('attacker finding 1: pipelined guesses on one connection count one by one; once the limit is reached even the right password is refused', async (t) => {
  let forwarded = 0
  const origin = await startOrigin(t, (_req, res) => { forwarded++; res.end('secret page') })
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const heads = Array.from({ length: PIPELINED }, (_, index) => {
    const password = index + 1 === RIGHT_AT ? 's3cret' : `guess-${index}`
    return `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nProxy-Authorization: ${basic('alice', password)}\r\n\r\n`
  })
  const statuses = await pipeline(proxy.port, heads)
  const checked = statuses.filter((status) => status === 407).length
  t.equal(checked, 10, 'exactly the limit of wrong guesses was checked')
  t.ok(statuses.slice(10).every((status) => status === 429), 'every later request got 429, whatever its password')
  t.not(statuses[RIGHT_AT - 1], 200, 'the right password behind the limit was not accepted')
  t.equal(forwarded, 0, 'nothing reached the origin')
})

test('pipelined requests with the right password are all served, in order', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 's3cret' } } })
  const head = `GET http://127.0.0.1:${origin.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${origin.port}\r\nProxy-Authorization: ${basic('alice', 's3cret')}\r\n\r\n`
  const statuses = await pipeline(proxy.port, Array.from({ length: 20 }, () => head))
  t.same(statuses, Array.from({ length: 20 }, () => 200))
})
