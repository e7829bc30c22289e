import { test } from 'tap'
import { request } from 'undici'
import { startProxy } from './helpers/servers'
import { startOrderedDestination } from './helpers/ordered-destination'
import { absoluteFormAgent } from './helpers/forward-client'
import { eventually } from './helpers/eventually'

test('the transform\'s signal aborts when the client leaves, and the request is then not sent', async (t) => {
  const destination = await startOrderedDestination(t)
  let aborted = false
  let entered = false
  let calls = 0
  const proxy = await startProxy(t, {
    transforms: [{
      transformRequest (_request, _destination, _outgoing, signal) {
        if (++calls > 1) return
        entered = true
        return new Promise<void>((resolve) => signal.addEventListener('abort', () => { aborted = true; resolve() }, { once: true }))
      }
    }]
  })
  const controller = new AbortController()
  const pending = request(`http://127.0.0.1:${destination.port}/left`, { dispatcher: absoluteFormAgent(t, proxy.url), signal: controller.signal })
  pending.catch(() => {})
  await eventually(() => entered)
  controller.abort()
  await eventually(() => aborted)
  t.ok(aborted)
  // A probe after it: had the request been sent after all, its connection would have come first.
  const stopProbe = new AbortController()
  const probe = request(`http://127.0.0.1:${destination.port}/probe`, { dispatcher: absoluteFormAgent(t, proxy.url), signal: stopProbe.signal })
  probe.catch(() => {})
  t.equal(await destination.indexOfSender('/probe'), 0, 'the request of the client that left was never sent')
  stopProbe.abort()
})
