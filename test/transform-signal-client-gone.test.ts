import { test } from 'tap'
import { request } from 'undici'
import { startProxy, startSentinel } from './helpers/servers'
import { absoluteFormAgent } from './helpers/forward-client'
import { eventually } from './helpers/eventually'

test('SPEC 2.3: the transform\'s signal aborts when the client leaves, and the request is then not sent', async (t) => {
  const sentinel = await startSentinel(t)
  let aborted = false
  let entered = false
  const proxy = await startProxy(t, {
    transforms: [{
      transformRequest (_request, _destination, _outgoing, signal) {
        entered = true
        return new Promise<void>((resolve) => signal.addEventListener('abort', () => { aborted = true; resolve() }, { once: true }))
      }
    }]
  })
  const controller = new AbortController()
  const pending = request(`http://127.0.0.1:${sentinel.port}/`, { dispatcher: absoluteFormAgent(t, proxy.url), signal: controller.signal })
  pending.catch(() => {})
  await eventually(() => entered)
  controller.abort()
  await eventually(() => aborted)
  t.ok(aborted)
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(sentinel.connections.length, 0)
})
