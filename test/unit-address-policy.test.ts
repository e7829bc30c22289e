import { test } from 'tap'
import { classifyAddress, canonicalHost, compileHostPattern, parseCidr, cidrContains, parseIP, credentialCheckFromUsers, parseConnectTarget } from './helpers/internals'

test('classifyAddress: each special-purpose range is named; public addresses are null', async (t) => {
  const cases: Array<[string, string | null]> = [
    ['0.1.2.3', 'unspecified'], ['10.9.8.7', 'private'], ['100.127.255.255', 'shared (CGNAT)'], ['127.5.5.5', 'loopback'],
    ['169.254.169.254', 'link-local'], ['172.31.0.1', 'private'], ['192.0.0.8', 'IETF protocol assignment'],
    ['192.0.2.1', 'documentation'], ['192.168.0.1', 'private'], ['198.19.0.1', 'benchmarking'], ['224.0.0.251', 'multicast'],
    ['240.0.0.1', 'reserved'], ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'], ['::1', 'loopback'], ['fd00:ec2::254', 'unique-local'], ['fe80::1', 'link-local'], ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'], ['2001::1', 'IETF protocol assignment'], ['100::1', 'discard-only'], ['64:ff9b:1::1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:a9fe:a9fe', 'link-local'], ['64:ff9b::a9fe:a9fe', 'link-local'], ['2002:0a00:0001::', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['8.8.8.8', null], ['93.184.215.14', null], ['2606:4700::1111', null], ['::ffff:8.8.8.8', null], ['64:ff9b::808:808', null]
  ]
  for (const [address, category] of cases) t.equal(classifyAddress(address), category, address)
  t.equal(classifyAddress('not an address'), 'reserved', 'anything unparsable is never treated as public')
})

test('canonicalHost: alternate IPv4 spellings become the dotted quad the policy judges', async (t) => {
  const cases: Array<[string, string | null]> = [
    ['2130706433', '127.0.0.1'], ['0x7f000001', '127.0.0.1'], ['0177.0.0.1', '127.0.0.1'], ['127.1', '127.0.0.1'],
    ['017700000001', '127.0.0.1'], ['012.0.0.1', '10.0.0.1'], ['0', '0.0.0.0'], ['EXAMPLE.COM.', 'example.com'],
    ['[::ffff:127.0.0.1]', '::ffff:7f00:1'], ['[0:0:0:0:0:0:0:1]', '::1'], ['bücher.example', null],
    ['a..b', null], ['.example', null], ['exa%6dple.com', null], ['user@host', null], ['[fe80::1%25eth0]', null], ['', null]
  ]
  for (const [input, expected] of cases) t.equal(canonicalHost(input), expected, JSON.stringify(input))
})

test('host patterns: *.example.com matches names below it only; configured IDNs compare as punycode', async (t) => {
  const wildcard = compileHostPattern('*.Example.com')
  t.ok(wildcard?.matches('api.example.com'))
  t.ok(wildcard?.matches('a.b.example.com'))
  t.notOk(wildcard?.matches('example.com'))
  t.notOk(wildcard?.matches('example.com.evil.net'))
  t.notOk(wildcard?.matches('evilexample.com'))
  t.ok(compileHostPattern('bücher.example')?.matches('xn--bcher-kva.example'))
  t.ok(compileHostPattern('::1')?.matches('::1'))
  t.equal(compileHostPattern('*.'), null)
})

test('CIDR: ranges parse and contain what they should', async (t) => {
  const range = parseCidr('10.1.0.0/16')
  const address = parseIP('10.1.200.3')
  t.ok(range !== null && address !== null && cidrContains(range, address))
  t.equal(parseCidr('10.0.0.0/33'), null)
  t.equal(parseCidr('fd00::/129'), null)
  t.ok(parseCidr('127.0.0.1'), 'a bare address is a single-host range')
})

test('CONNECT targets: host:port only', async (t) => {
  t.same(parseConnectTarget('Example.COM:443'), { host: 'example.com', port: 443 })
  t.same(parseConnectTarget('[::1]:8443'), { host: '::1', port: 8443 })
  for (const bad of ['example.com', 'example.com:0', 'example.com:65536', 'user@example.com:443', 'http://example.com:443', 'example.com:443/x', 'ex%61mple.com:443', 'example.com:+443', 'example.com: 443']) {
    t.equal(parseConnectTarget(bad), null, bad)
  }
})

test('built-in user table: right password passes; wrong password and unknown user fail alike', async (t) => {
  const check = credentialCheckFromUsers({ alice: 's3cret' })
  t.equal(check('alice', 's3cret', undefined as never), true)
  t.equal(check('alice', 'S3cret', undefined as never), false)
  t.equal(check('bob', 's3cret', undefined as never), false)
  t.equal(check('bob', '\u0000fastify-forward-proxy-absent-user\u0000', undefined as never), false, 'the placeholder password of unknown users never logs anyone in')
})
