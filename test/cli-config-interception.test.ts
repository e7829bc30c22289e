import { test } from 'tap'
import { parseConfig } from './helpers/internals'

const parse = (value: unknown): ReturnType<typeof parseConfig> => parseConfig(value, 'proxy.json', '/srv')
const ca = { cert: 'ca.pem', key: 'keys/ca.key' }

test('config: interception and headers are read, with paths resolved against the file\'s folder', async (t) => {
  const config = parse({
    interception: {
      hosts: ['api.example.com', '*.internal.example'],
      ca,
      trustedDestinationCa: 'private-ca.pem',
      clientProtocols: 'http1',
      handshakeTimeout: 5000,
      passthroughOnClientRefusal: { after: 3, for: 600000 }
    },
    headers: [{ hosts: ['api.example.com'], set: { Authorization: 'Bearer x' }, remove: ['Cookie'], setResponse: { 'X-Proxy': 'yes' }, removeResponse: ['Server'] }]
  })
  t.same(config.interception, {
    hosts: ['api.example.com', '*.internal.example'],
    ca: { cert: '/srv/ca.pem', key: '/srv/keys/ca.key' },
    trustedDestinationCa: '/srv/private-ca.pem',
    clientProtocols: 'http1',
    handshakeTimeout: 5000,
    passthroughOnClientRefusal: { after: 3, for: 600000 }
  })
  t.equal(config.headers?.length, 1)
})

test('config: a bad interception key is named with what is expected', async (t) => {
  t.throws(() => parse({ interception: { hosts: [], ca } }), { name: 'ConfigError', message: 'proxy.json: /interception/hosts must list at least 1 item' })
  t.throws(() => parse({ interception: { hosts: ['a.example'], ca, clientProtocols: 'h3' } }), { message: 'proxy.json: /interception/clientProtocols must be one of "http1", "http2", "http1AndHttp2"' })
  t.throws(() => parse({ interception: { hosts: ['a.example'], ca, handshakeTimeout: 0 } }), { message: 'proxy.json: /interception/handshakeTimeout must be an integer from 1 to 2147483647' })
  t.throws(() => parse({ interception: { hosts: ['a.example'], ca, selector: 'x' } }), { message: 'proxy.json: /interception: unknown key "selector"' })
  t.throws(() => parse({ interception: { hosts: ['a.example'], ca, passthroughOnClientRefusal: { after: 0, for: 1000 } } }), { message: /^proxy\.json: \/interception\/passthroughOnClientRefusal\/after must be an integer from 1 to 1000/ })
  t.throws(() => parse({ interception: { hosts: ['a.example'], ca, passthroughOnClientRefusal: { after: 3 } } }), { message: /^proxy\.json: \/interception\/passthroughOnClientRefusal: missing required key "for"/ })
  t.throws(() => parse({ interception: { hosts: ['exa mple.com'], ca } }), { message: /^proxy\.json: interception hosts\[0\] is not a host pattern/ })
})

test('config: header rules cannot touch what the proxy manages, and a bad value is refused without quoting it', async (t) => {
  t.throws(() => parse({ headers: [{ hosts: ['a.example'], set: { Host: 'b.example' } }] }), { name: 'ConfigError', message: /^proxy\.json: headers\[0\]\.set\.Host: the proxy manages "host" itself/ })
  t.throws(() => parse({ headers: [{ hosts: ['a.example'], remove: ['Transfer-Encoding'] }] }), { message: /headers\[0\]\.remove\[0\]: the proxy manages "transfer-encoding" itself/ })
  t.throws(() => parse({ headers: [{ hosts: ['a.example'], set: { 'Bad Name': 'x' } }] }), { message: /headers\[0\]\.set\.Bad Name is not a valid header name/ })
  const secret = 'Bearer top-secret\r\nX-Evil: 1'
  const error = t.throws(() => parse({ headers: [{ hosts: ['a.example'], set: { Authorization: secret } }] }), { message: /headers\[0\]\.set\.authorization must be a string of characters allowed in a header value/ }) as Error | undefined
  t.notMatch(String(error?.message), /top-secret/, 'the value (maybe a credential) is not in the message')
  t.throws(() => parse({ headers: [{ set: { A: 'b' } }] }), { message: 'proxy.json: /headers/0: missing required key "hosts"' })
})
