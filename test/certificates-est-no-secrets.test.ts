import { inspect } from 'node:util'
import { test } from 'tap'
import { createEstCertificateProvider } from '../lib/index'
import { startOpensslEstResponder } from './helpers/openssl-est-responder'

const PASSWORD = 'echoed-secret-6a0d'

test('EST errors hold no secret: a service echoing the Authorization header in its refusal has it redacted from the error (message, stack, inspect, JSON)', async (t) => {
  const responder = await startOpensslEstResponder(t, { echoAuthorization: true })
  const provider = createEstCertificateProvider({ url: responder.url, ca: responder.ca.cert, username: 'proxy', password: PASSWORD })
  t.teardown(() => provider.close())
  const error = await provider.getLeaf('api.example.com').then(() => null, (caught: unknown) => caught as Error)
  t.match(error, { name: 'ForwardProxyEstError', reason: 'est_refused', estStatus: 403, message: /HTTP status 403: refused for Authorization: Basic \[redacted\]/ })
  const token = Buffer.from(`proxy:${PASSWORD}`).toString('base64')
  for (const shown of [String(error?.message), String(error?.stack), inspect(error, { depth: 5 }), JSON.stringify(error)]) {
    t.notMatch(shown, PASSWORD)
    t.notMatch(shown, token)
  }

  // However short the password, a service echoing it decoded finds it redacted too.
  const short = await startOpensslEstResponder(t, { echoAuthorization: 'decoded' })
  const shortPassword = createEstCertificateProvider({ url: short.url, ca: short.ca.cert, username: 'proxy', password: 'pw1' })
  t.teardown(() => shortPassword.close())
  const shortError = await shortPassword.getLeaf('api.example.com').then(() => null, (caught: unknown) => caught as Error)
  t.match(shortError, { reason: 'est_refused', message: /Basic \[redacted\] = proxy:\[redacted\]/ })
  t.notMatch(String(shortError?.message), 'pw1')

  // Option errors name the option, never a secret value.
  const optionError = (() => {
    try {
      createEstCertificateProvider({ url: `https://proxy:${PASSWORD}@127.0.0.1/`, password: PASSWORD })
      return null
    } catch (caught) {
      return caught as Error
    }
  })()
  t.match(optionError, { reason: 'invalid_option', message: /must not hold credentials/ })
  t.notMatch(String(optionError?.message), PASSWORD)
  t.throws(() => createEstCertificateProvider({ url: 'http://127.0.0.1/' }), { reason: 'invalid_option', message: /must use https:/ })
})
