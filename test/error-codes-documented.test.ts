import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'tap'
import { ForwardProxyCertificateError, ForwardProxyEstError, ForwardProxyOptionsError, ForwardProxyRuleError, ProxyError, PROXY_ERROR_STATUS, CERTIFICATE_ERROR_CODES, EST_ERROR_CODES, OPTIONS_ERROR_CODE, RULE_ERROR_CODE, createHostListSelector, forwardProxy, type ProxyErrorType } from '../lib/index'
import Fastify from 'fastify'

/** docs/errors.md's "Error codes" section: every row as [code, second column, third column]. */
function documentedCodes (): Map<string, [string, string]> {
  const doc = readFileSync(join(__dirname, '..', 'docs', 'errors.md'), 'utf8')
  const section = /\n## Error codes\n([\s\S]*?)(?=\n## |$)/.exec(doc)?.[1]
  if (section === undefined) throw new Error('docs/errors.md has no "## Error codes" section')
  const rows = new Map<string, [string, string]>()
  for (const row of section.matchAll(/^\| `(FFP_ERR_[A-Z_]+)` \| ([^|]+) \| ([^|]+) \|$/gm)) rows.set(row[1] ?? '', [(row[2] ?? '').trim(), (row[3] ?? '').trim()])
  return rows
}

test('error codes: every code an error of the package carries is in docs/errors.md, a ProxyError\'s with its Proxy-Status type and default status', async (t) => {
  const documented = documentedCodes()
  for (const type of Object.keys(PROXY_ERROR_STATUS) as ProxyErrorType[]) {
    const error = new ProxyError(type, 'm')
    t.equal(error.code, `FFP_ERR_${type.toUpperCase()}`)
    t.strictSame(documented.get(error.code), [`\`${type}\``, String(PROXY_ERROR_STATUS[type])], `${error.code} is documented with its type and status`)
  }
  const thrown: Array<[string, string]> = [
    [OPTIONS_ERROR_CODE, 'ForwardProxyOptionsError'],
    [RULE_ERROR_CODE, 'ForwardProxyRuleError'],
    ...Object.values(CERTIFICATE_ERROR_CODES).map((code): [string, string] => [code, 'ForwardProxyCertificateError']),
    ...Object.values(EST_ERROR_CODES).map((code): [string, string] => [code, 'ForwardProxyEstError']),
    ['FFP_ERR_TRANSFORM_AFTER_READY', 'FastifyError'],
    ['FFP_ERR_INTERCEPTION_WITHOUT_PROXY', 'FastifyError'],
    ['FFP_ERR_INTERCEPTION_REGISTERED_TWICE', 'FastifyError'],
    ['FFP_ERR_INTERCEPTION_OTHER_CONTEXT', 'FastifyError'],
    ['FFP_ERR_INTERCEPTION_NOT_REGISTERED', 'FastifyError'],
    ['FFP_ERR_INVALID_PROXY_CONSTRAINT', 'FastifyError'],
    ['FFP_ERR_NOT_A_SERVER', 'FastifyError'],
    ['FFP_ERR_PROXY_CLOSED', 'FastifyError'],
    ['FFP_ERR_PROXY_UNDER_PREFIX', 'FastifyError'],
    ['FFP_ERR_LIMIT_STORE_UNAVAILABLE', 'LimitStoreUnavailableError'],
    ['FFP_ERR_INVALID_CONFIG', 'ConfigError'],
    ['FFP_ERR_METRICS_PROVIDER_IN_USE', 'FastifyError'],
    ['FFP_ERR_CAPTURE_NOT_A_FILE', 'FastifyError'],
    ['FFP_ERR_NOT_A_CAPTURE', 'FastifyError']
  ]
  for (const [code, className] of thrown) t.equal(documented.get(code)?.[0], `\`${className}\``, `${code} is documented as a ${className}`)
  t.equal(documented.size, Object.keys(PROXY_ERROR_STATUS).length + thrown.length, 'and nothing else is listed')
})

test('error codes: every code written in lib/ is documented, so a new one fails here until it is', async (t) => {
  const documented = documentedCodes()
  const lib = join(__dirname, '..', 'lib')
  const inCode = new Set<string>()
  for (const file of readdirSync(lib, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'))) {
    for (const match of readFileSync(join(lib, file), 'utf8').matchAll(/['"`](FFP_ERR_[A-Z0-9_]*[A-Z0-9])['"`]/g)) inCode.add(match[1] ?? '')
  }
  t.ok(inCode.size > 20, `found the codes in lib/ (${inCode.size})`)
  t.strictSame([...inCode].filter((code) => !documented.has(code)).sort(), [], 'every code is in docs/errors.md')
})

test('error codes: the errors the package throws carry their codes', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(forwardProxy, { limits: { connectTimeout: 0 } }).ready() }, { name: 'ForwardProxyOptionsError', code: 'FFP_ERR_INVALID_OPTION', option: 'limits.connectTimeout' })
  t.throws(() => createHostListSelector(['exa mple.com']), { name: 'ForwardProxyRuleError', code: 'FFP_ERR_INVALID_RULE' })
  t.equal(new ForwardProxyOptionsError('via', 'must be a string').code, 'FFP_ERR_INVALID_OPTION')
  t.equal(new ForwardProxyRuleError('bad').code, 'FFP_ERR_INVALID_RULE')
  t.equal(new ForwardProxyCertificateError('key_mismatch', 'm').code, 'FFP_ERR_CERTIFICATE_KEY_MISMATCH')
  t.equal(new ForwardProxyEstError('est_timeout', 'm').code, 'FFP_ERR_EST_TIMEOUT')
})
