// The users table remembers credentials that passed, so a client's later requests skip the
// hashing; what it remembers never lets one user's credentials pass for another's, and goes with
// the table when a reconfiguration replaces it.
import { test } from 'tap'
import { basic, rawExchange } from './helpers/raw-client'
import { startOrigin, startProxy } from './helpers/servers'

const through = async (port: number, target: string, user: string, password: string): Promise<string> =>
  (await rawExchange(port, `GET ${target} HTTP/1.1\r\nHost: ${new URL(target).host}\r\nProxy-Authorization: ${basic(user, password)}\r\nConnection: close\r\n\r\n`)).text

test('a name and password that run together like a remembered pair are not taken for it', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { ab: 'c-password-1234' } } })
  const target = `http://127.0.0.1:${origin.port}/x`
  t.match(await through(proxy.port, target, 'ab', 'c-password-1234'), /^HTTP\/1\.1 200 /)
  t.match(await through(proxy.port, target, 'ab', 'c-password-1234'), /^HTTP\/1\.1 200 /, 'remembered')
  t.match(await through(proxy.port, target, 'a', 'bc-password-1234'), /^HTTP\/1\.1 407 /, 'user "a" with "bc-..." is not user "ab" with "c-..."')
  t.match(await through(proxy.port, target, 'ab', 'c-password-123'), /^HTTP\/1\.1 407 /)
})

test('a reconfiguration that changes a password refuses the remembered old one at the next request', async (t) => {
  const origin = await startOrigin(t)
  const proxy = await startProxy(t, { auth: { users: { alice: 'old-password' } } })
  const target = `http://127.0.0.1:${origin.port}/x`
  t.match(await through(proxy.port, target, 'alice', 'old-password'), /^HTTP\/1\.1 200 /)
  proxy.app.forwardProxy.reconfigure({ destinations: { allowPrivateNetworks: true, allowedPorts: '*' }, auth: { users: { alice: 'new-password' } } })
  t.match(await through(proxy.port, target, 'alice', 'old-password'), /^HTTP\/1\.1 407 /)
  t.match(await through(proxy.port, target, 'alice', 'new-password'), /^HTTP\/1\.1 200 /)
})
