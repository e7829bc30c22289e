import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseConfig } from './helpers/internals'

test('config: examples/proxy-http2.example.json is valid and has a TLS listener with HTTP/2', async (t) => {
  const examples = join(__dirname, '..', 'examples')
  const value: unknown = JSON.parse(readFileSync(join(examples, 'proxy-http2.example.json'), 'utf8'))
  const config = parseConfig(value, 'examples/proxy-http2.example.json', examples)
  t.same(config.listen[1], { host: '127.0.0.1', port: 8443, tls: { cert: join(examples, 'proxy.pem'), key: join(examples, 'proxy.key') }, http2: true })
})
