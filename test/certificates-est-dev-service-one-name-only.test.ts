import { execFileSync } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { test } from 'tap'
import { Agent, request } from 'undici'
import { buildEstService } from '../examples/est-dev-service/est-service'
import { fixtureDirectory, makeCa } from './helpers/ca-fixtures'

/** A PKCS#10 request (DER, made by the openssl CLI) for CN api.example.com with `subjectAltName`. */
function opensslRequest (subjectAltName: string): Buffer {
  return execFileSync('openssl', [
    'req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', '/dev/null',
    '-subj', '/CN=api.example.com', '-addext', `subjectAltName=${subjectAltName}`, '-outform', 'DER'
  ], { stdio: ['ignore', 'pipe', 'ignore'] })
}

test('examples/est-dev-service signs a request only when it asks for exactly one name: a second subjectAltName of any type (an email, a URI) besides the DNS name is refused with 400', async (t) => {
  const ca = await makeCa(fixtureDirectory(t), { name: 'EST Dev CA' })
  const service = await buildEstService({
    ca: { cert: ca.cert, key: ca.key },
    allowlist: ['api.example.com'],
    users: { proxy: 'dev-pass-0c2e' },
    serverName: '127.0.0.1',
    announce: () => {}
  })
  t.teardown(() => service.close())
  await service.listen({ host: '127.0.0.1', port: 0 })
  const agent = new Agent({ connect: { ca: ca.cert } })
  t.teardown(() => agent.close())
  const enroll = async (subjectAltName: string): Promise<{ status: number, text: string }> => {
    const answer = await request(`https://127.0.0.1:${(service.server.address() as AddressInfo).port}/.well-known/est/simpleenroll`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Basic ${Buffer.from('proxy:dev-pass-0c2e').toString('base64')}`, 'content-type': 'application/pkcs10' },
      body: opensslRequest(subjectAltName).toString('base64')
    })
    return { status: answer.statusCode, text: await answer.body.text() }
  }

  t.equal((await enroll('DNS:api.example.com')).status, 200, 'one DNS name on the allowlist is signed')
  for (const names of ['DNS:api.example.com,email:a@b.example', 'DNS:api.example.com,URI:https://other.example/', 'email:a@b.example']) {
    const refused = await enroll(names)
    t.equal(refused.status, 400, `${names} is refused`)
    t.match(refused.text, /exactly one subjectAltName/)
  }
})
