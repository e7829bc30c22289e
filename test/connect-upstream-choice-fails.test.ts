// When the application's function that chooses an upstream proxy fails for a CONNECT (it throws,
// or it names an upstream the proxy cannot use), the CONNECT is answered 500
// `proxy_internal_error` before any 200, with nothing of the failure in the answer, nothing is
// dialed, and the tunnel slot it held is given back: with a limit of one tunnel, the next CONNECT
// still opens.
import { test } from 'tap'
import { openTunnel } from './helpers/raw-client'
import { startProxy, startSentinel } from './helpers/servers'
import { expectNothingDialedBefore } from './helpers/nothing-dialed'
import { echoesThrough, startTcpDestination } from './helpers/tcp-destination'

test('an upstream choice that throws or names an unusable upstream gets 500 proxy_internal_error for the CONNECT, nothing dialed, and its tunnel slot back', async (t) => {
  const sentinel = await startSentinel(t)
  const destination = await startTcpDestination(t)
  const choices = [
    (): string | null => { throw new Error('selector secret failure') },
    (): string | null => 'socks5://user:selector-secret@127.0.0.1:1',
    (): string | null => null
  ]
  let asked = 0
  const proxy = await startProxy(t, {
    limits: { maxConcurrentTunnels: 1 },
    upstreamProxies: () => {
      const choose = choices[Math.min(asked, choices.length - 1)] as () => string | null
      asked++
      return choose()
    }
  })

  for (const how of ['throws', 'names an unusable upstream']) {
    const refused = await openTunnel(proxy.port, `127.0.0.1:${sentinel.port}`)
    refused.socket.destroy()
    t.equal(refused.status, 500, `the choice ${how}: 500`)
    t.match(refused.head, /proxy-status: [^\r\n]*error=proxy_internal_error/i, `the choice ${how}: Proxy-Status says proxy_internal_error`)
    t.notMatch(refused.head, /secret/, `the choice ${how}: nothing of the failure in the answer`)
  }
  await expectNothingDialedBefore(t, sentinel.accepts, 'neither refused CONNECT dialed its target')

  // With the limit at one tunnel, a slot kept by either refusal would turn this one away (503).
  const opened = await openTunnel(proxy.port, `127.0.0.1:${destination.port}`)
  t.equal(opened.status, 200, 'the next CONNECT opens: both slots were given back')
  if (opened.status === 200) await echoesThrough(opened.socket, await destination.nextConnection(), 'through the tunnel')
  opened.socket.destroy()
  t.equal(asked, 3, 'the choice was asked once per CONNECT')
})
