import { test } from 'tap'
import { checkLogsHoldNoSecret } from './helpers/log-secrets-run'

test('server logs (json, level trace): a full run with credential injection writes access lines but never a password, a Proxy-Authorization value, an injected header value, a cookie or URL userinfo', async (t) => {
  await checkLogsHoldNoSecret(t, 'json')
})
