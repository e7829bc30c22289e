import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join, posix } from 'node:path'
import { test, type Test } from 'tap'
import { parseAllDocuments } from 'yaml'
import { loadConfigFile, redisOption } from './helpers/internals'
import { closedPort } from './helpers/closed-port'
import { parseDockerfile } from './helpers/dockerfile'
import { kubernetesObjectProblems } from './helpers/kubernetes-schema'
import { REDIS_SERVER, redisServerMissing, untilAcceptingConnections } from './helpers/redis-server'

const ROOT = join(__dirname, '..')
const DIRECTORY = join(ROOT, 'deploy', 'kubernetes')

interface Manifest { file: string, object: Record<string, unknown> }

/** Every document of every YAML file, read as kubectl reads them (YAML 1.1: 0440 is octal). */
function manifests (): Manifest[] {
  return readdirSync(DIRECTORY).filter((name) => name.endsWith('.yaml')).sort().flatMap((file) => {
    return parseAllDocuments(readFileSync(join(DIRECTORY, file), 'utf8'), { version: '1.1' }).map((document) => {
      if (document.errors.length > 0) throw new Error(`${file}: ${document.errors.map((error) => error.message).join('; ')}`)
      return { file, object: document.toJS() as Record<string, unknown> }
    })
  })
}

/** Walks `value` by property names; undefined when a step is missing. */
function at (value: unknown, ...path: Array<string | number>): unknown {
  let current = value
  for (const step of path) {
    if (typeof current !== 'object' || current === null) return undefined
    current = (current as Record<string | number, unknown>)[step]
  }
  return current
}

function one (all: Manifest[], kind: string, name: string): Record<string, unknown> {
  const found = all.find((manifest) => manifest.object.kind === kind && at(manifest.object, 'metadata', 'name') === name)
  if (found === undefined) throw new Error(`deploy/kubernetes has no ${kind} ${name}`)
  return found.object
}

interface Mount { name: string, mountPath: string, subPath?: string, readOnly?: boolean }
interface Volume {
  name: string
  secret?: { secretName: string, defaultMode?: number, items?: Array<{ key: string, path: string }> }
  configMap?: object
  emptyDir?: object
}
interface EnvVar { name: string, value?: string, valueFrom?: { secretKeyRef?: { name: string, key: string, optional?: boolean } } }
type Labels = Record<string, string>

/** The configuration file of the Secret forward-proxy-config, loaded with the bin's own loader. */
function loadedConfig (t: Test, all: Manifest[]): ReturnType<typeof loadConfigFile> {
  const text = at(one(all, 'Secret', 'forward-proxy-config'), 'stringData', 'proxy.json')
  const directory = mkdtempSync(join(tmpdir(), 'ffp-manifest-config-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  writeFileSync(join(directory, 'proxy.json'), String(text))
  return loadConfigFile(join(directory, 'proxy.json'))
}

/** The first container and the pod labels of Deployment `name`. */
function podOf (all: Manifest[], name: string): { pod: Record<string, unknown>, container: Record<string, unknown>, labels: Labels } {
  const template = at(one(all, 'Deployment', name), 'spec', 'template')
  return {
    pod: at(template, 'spec') as Record<string, unknown>,
    container: at(template, 'spec', 'containers', 0) as Record<string, unknown>,
    labels: at(template, 'metadata', 'labels') as Labels
  }
}

/** Whether a matchLabels selector selects a pod with `labels`. */
function selects (matchLabels: unknown, labels: Labels): boolean {
  return Object.entries(matchLabels as Labels).every(([key, value]) => labels[key] === value)
}

test('deploy/kubernetes: every document validates against the Kubernetes schema of its kind, with no field the API does not know', async (t) => {
  const all = manifests()
  t.same([...new Set(all.map((manifest) => manifest.object.kind))].sort(), ['Deployment', 'Namespace', 'NetworkPolicy', 'PodDisruptionBudget', 'Secret', 'Service', 'ServiceAccount'])
  for (const { file, object } of all) {
    t.same(kubernetesObjectProblems(object), [], `${file}: ${String(object.kind)} ${String(at(object, 'metadata', 'name'))}`)
  }
})

test('deploy/kubernetes: the check refuses an invalid value and a misspelt field', async (t) => {
  const deployment = structuredClone(one(manifests(), 'Deployment', 'forward-proxy'))
  const spec = at(deployment, 'spec') as Record<string, unknown>
  spec.replicas = 'three'
  t.match(kubernetesObjectProblems(deployment), [/spec\/replicas must be integer/])
  spec.replicas = 3
  const container = at(spec, 'template', 'spec', 'containers', 0) as Record<string, unknown>
  container.readinesProbe = container.readinessProbe
  t.same(kubernetesObjectProblems(deployment), ['/spec/template/spec/containers/0/readinesProbe: a field the schema does not know'])
})

test('deploy/kubernetes: the configuration loads with the bin\'s own loader, and every file and variable it names is mounted from a Secret', async (t) => {
  const all = manifests()
  const configSecret = one(all, 'Secret', 'forward-proxy-config')
  const text = at(configSecret, 'stringData', 'proxy.json')
  t.type(text, 'string', 'the configuration is proxy.json of the Secret forward-proxy-config')
  const directory = mkdtempSync(join(tmpdir(), 'ffp-manifest-config-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  writeFileSync(join(directory, 'proxy.json'), String(text))
  const config = loadConfigFile(join(directory, 'proxy.json'))
  t.ok(config.users !== undefined && Object.keys(config.users).length > 0, 'with users, which is why it is a Secret')

  const deployment = one(all, 'Deployment', 'forward-proxy')
  const pod = at(deployment, 'spec', 'template', 'spec') as Record<string, unknown>
  const container = at(pod, 'containers', 0) as Record<string, unknown>
  const mounts = (container.volumeMounts ?? []) as Mount[]
  const volumes = (pod.volumes ?? []) as Volume[]
  const secretMountOf = (path: string): { mount: Mount, volume: Volume } | undefined => {
    const mount = mounts.find((candidate) => posix.dirname(path) === candidate.mountPath)
    const volume = volumes.find((candidate) => candidate.name === mount?.name)
    return mount === undefined || volume?.secret === undefined ? undefined : { mount, volume }
  }

  const args = container.args as string[]
  const configPath = args[args.indexOf('--config') + 1] ?? ''
  const configMount = secretMountOf(configPath)
  t.equal(configMount?.volume.secret?.secretName, 'forward-proxy-config', `--config ${configPath} is in the mounted configuration Secret`)
  t.equal(posix.basename(configPath), 'proxy.json')
  for (const mount of mounts) t.equal(mount.subPath, undefined, `${mount.mountPath}: a folder, not subPath (subPath mounts are never updated)`)

  const files = [
    config.interception?.ca?.cert,
    config.interception?.ca?.key,
    ...Object.values(config.secrets ?? {}).map((secret) => secret.file),
    config.redis?.password?.file
  ].filter((path): path is string => path !== undefined)
  t.ok(files.length >= 3, 'the CA certificate and key, and a secret file')
  for (const path of files) {
    const found = secretMountOf(path)
    t.ok(found !== undefined, `${path} is in a mounted Secret`)
    t.equal(found?.mount.readOnly, true, `${path}: mounted read-only`)
    const items = found?.volume.secret?.items
    if (items !== undefined) t.ok(items.some((item) => item.path === posix.basename(path)), `${path}: projected by the volume's items`)
  }
  t.equal(secretMountOf(config.interception?.ca?.key ?? '')?.volume.secret?.secretName, 'forward-proxy-ca')
  const env = (container.env ?? []) as EnvVar[]
  for (const [name, secret] of Object.entries(config.secrets ?? {})) {
    if (secret.env === undefined) continue
    t.ok(env.find((variable) => variable.name === secret.env)?.valueFrom?.secretKeyRef !== undefined, `secret ${name}: ${secret.env} comes from a Secret`)
  }
  const redisPassword = config.redis?.password?.env
  if (redisPassword !== undefined) t.ok(env.find((variable) => variable.name === redisPassword)?.valueFrom?.secretKeyRef !== undefined, `redis.password: ${redisPassword} comes from a Secret`)
  for (const volume of volumes) {
    if (volume.secret !== undefined) t.equal(volume.secret.defaultMode, 0o440, `${volume.name}: files 0440 (what kubelet makes of 0400 with fsGroup anyway)`)
  }
})

test('deploy/kubernetes: the pod runs as the image\'s non-root user with a read-only root, no capabilities, /healthz probes and resources', async (t) => {
  const all = manifests()
  const pod = at(one(all, 'Deployment', 'forward-proxy'), 'spec', 'template', 'spec') as Record<string, unknown>
  const container = at(pod, 'containers', 0) as Record<string, unknown>
  const image = parseDockerfile(readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8')).at(-1)
  const [uid, gid] = (image?.user ?? '').split(':').map(Number)
  t.match(at(pod, 'securityContext'), { runAsNonRoot: true, runAsUser: uid, runAsGroup: gid, fsGroup: gid }, 'the Dockerfile\'s user, and its group as fsGroup')
  t.match(at(container, 'securityContext'), { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })
  for (const probe of ['readinessProbe', 'livenessProbe']) t.match(at(container, probe, 'httpGet'), { path: '/healthz', port: 'proxy' }, probe)
  t.match(at(container, 'resources'), { requests: { cpu: String, memory: String }, limits: { memory: String } })
  t.same(at(container, 'args'), image?.cmd, 'the same arguments as the image\'s CMD')
  t.match(at(one(all, 'PodDisruptionBudget', 'forward-proxy'), 'spec', 'selector'), at(one(all, 'Deployment', 'forward-proxy'), 'spec', 'selector'))
})

test('deploy/kubernetes: network policies let only the proxy out, and the namespace\'s pods in to it', async (t) => {
  const all = manifests()
  const podLabels = at(one(all, 'Deployment', 'forward-proxy'), 'spec', 'template', 'metadata', 'labels')
  const everyPod = one(all, 'NetworkPolicy', 'egress-through-proxy-only')
  t.same(at(everyPod, 'spec', 'podSelector'), {}, 'every pod of the namespace')
  const allowed = at(everyPod, 'spec', 'egress') as Array<{ to: object[] }>
  t.same(at(allowed, 0, 'to'), [{ podSelector: { matchLabels: podLabels } }], 'may reach the proxy')
  t.match(at(allowed, 1, 'to', 0), { podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }, 'and the cluster DNS')
  t.equal(allowed.length, 2, 'nothing else')
  const proxy = one(all, 'NetworkPolicy', 'forward-proxy')
  t.same(at(proxy, 'spec', 'podSelector'), { matchLabels: podLabels })
  t.same(at(proxy, 'spec', 'egress'), [{}], 'the proxy reaches anything')
  t.same(at(proxy, 'spec', 'ingress', 0, 'from'), [{ podSelector: {} }], 'from the namespace\'s pods')
})

test('deploy/kubernetes: the proxies count their limits in the Valkey of 60-redis.yaml, with the password of one Secret', async (t) => {
  const all = manifests()
  const config = loadedConfig(t, all)
  const redis = config.redis
  if (redis === undefined) throw new Error('the configuration has no "redis"')
  const variable = redis.password?.env
  t.equal(typeof variable, 'string', 'redis.password from an environment variable')
  t.equal(redis.password?.file, undefined)

  const proxy = podOf(all, 'forward-proxy')
  const proxyVariable = ((proxy.container.env ?? []) as EnvVar[]).find((candidate) => candidate.name === variable)
  const reference = proxyVariable?.valueFrom?.secretKeyRef
  t.match(reference, { name: String, key: String }, `${String(variable)} of the proxy's Deployment is a secretKeyRef`)
  t.not(reference?.optional, true, 'not optional: a proxy without the password would only be refused by Redis')
  t.equal(proxyVariable?.value, undefined, 'no literal value')
  // What the bin does at start-up: the password is read from that variable then, not at load.
  t.equal(redisOption(redis, { [String(variable)]: 'from-the-secret' }).password, 'from-the-secret')
  t.throws(() => redisOption(redis, {}), { name: 'ConfigError', message: new RegExp(`${String(variable)} is not set`) })

  const valkey = podOf(all, 'forward-proxy-redis')
  const valkeyEnv = (valkey.container.env ?? []) as EnvVar[]
  t.same(valkeyEnv.map((candidate) => candidate.valueFrom?.secretKeyRef), [reference], 'the Valkey reads the same key of the same Secret, and nothing else')

  const url = new URL(redis.url)
  const service = one(all, 'Service', 'forward-proxy-redis')
  const namespace = String(at(service, 'metadata', 'namespace'))
  t.ok(['forward-proxy-redis', `forward-proxy-redis.${namespace}`, `forward-proxy-redis.${namespace}.svc.cluster.local`].includes(url.hostname), `${url.hostname} is the Service forward-proxy-redis of namespace ${namespace}`)
  const port = at(service, 'spec', 'ports', 0) as { port: number, targetPort: string | number }
  t.equal(port.port, url.port === '' ? 6379 : Number(url.port), 'the Service\'s port is the URL\'s')
  t.ok(selects(at(service, 'spec', 'selector'), valkey.labels), 'the Service selects the Valkey pod')
  const containerPorts = (valkey.container.ports ?? []) as Array<{ name?: string, containerPort: number }>
  t.ok(containerPorts.some((candidate) => candidate.name === port.targetPort || candidate.containerPort === port.targetPort), 'its targetPort is the container\'s')

  for (const [kind, name, path] of [['Service', 'forward-proxy', ['spec', 'selector']], ['PodDisruptionBudget', 'forward-proxy', ['spec', 'selector', 'matchLabels']], ['NetworkPolicy', 'forward-proxy', ['spec', 'podSelector', 'matchLabels']]] as const) {
    t.notOk(selects(at(one(all, kind, name), ...path), valkey.labels), `the proxy's ${kind} does not select the Valkey pod`)
  }
})

test('deploy/kubernetes: the Valkey pod is locked down like the proxy\'s, keeps its password off the command line and saves nothing', async (t) => {
  const all = manifests()
  const { pod, container } = podOf(all, 'forward-proxy-redis')
  t.equal(at(one(all, 'Deployment', 'forward-proxy-redis'), 'spec', 'replicas'), 1, 'one: two would each count part of the traffic')
  t.equal(pod.automountServiceAccountToken, false)
  t.match(pod.securityContext, { runAsNonRoot: true, runAsUser: Number, seccompProfile: { type: 'RuntimeDefault' } })
  t.not(at(pod, 'securityContext', 'runAsUser'), 0)
  t.match(container.securityContext, { runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })
  t.match(container.resources, { requests: { cpu: String, memory: String }, limits: { memory: String } })
  for (const probe of ['readinessProbe', 'livenessProbe']) t.ok(at(container, probe) !== undefined, probe)

  const words = [...(container.command ?? []) as string[], ...(container.args ?? []) as string[]]
  t.notOk(words.some((word) => word.includes('$(')), 'no $(VAR): kubelet would write the value into the container\'s arguments')
  t.notOk(words.some((word) => /--requirepass/.test(word)), 'no --requirepass on a command line')
  const script = words.at(-1) ?? ''
  t.match(script, /^requirepass "\$REDIS_PASSWORD"$/m, 'the password goes in on stdin, expanded by the shell')
  t.match(script, /^save ""$/m, 'no snapshots')
  t.match(script, /^appendonly no$/m, 'no append-only file')
  const maxmemory = /^maxmemory (\d+)mb$/m.exec(script)?.[1]
  const limit = /^(\d+)Mi$/.exec(String(at(container, 'resources', 'limits', 'memory')))?.[1]
  t.ok(Number(maxmemory) > 0 && Number(maxmemory) < Number(limit), `maxmemory ${String(maxmemory)}mb below the memory limit ${String(limit)}Mi: refused writes rather than a killed pod`)
})

test('deploy/kubernetes: the Valkey\'s command starts a server that wants the Secret\'s password, which no command line shows, and writes no file', { skip: redisServerMissing }, async (t) => {
  const { container } = podOf(manifests(), 'forward-proxy-redis')
  const [shell, ...rest] = [...(container.command ?? []) as string[], ...(container.args ?? []) as string[]]
  const directory = mkdtempSync(join(tmpdir(), 'ffp-manifest-valkey-'))
  t.teardown(() => rmSync(directory, { recursive: true, force: true }))
  const port = await closedPort()
  // valkey-server is redis-server here (the same configuration language), on a free loopback port.
  writeFileSync(join(directory, 'valkey-server'), `#!/bin/sh\nexec '${String(REDIS_SERVER)}' "$@" --port ${port} --bind 127.0.0.1\n`)
  chmodSync(join(directory, 'valkey-server'), 0o755)
  const password = randomBytes(32).toString('hex')
  const child = spawn(shell ?? '', rest, { cwd: directory, env: { PATH: `${directory}${delimiter}${process.env.PATH ?? ''}`, REDIS_PASSWORD: password }, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => {
    child.kill('SIGKILL')
    await exited
  })
  await untilAcceptingConnections(child, 'the Valkey\'s command')

  if (process.platform === 'linux') t.notOk(readFileSync(`/proc/${String(child.pid)}/cmdline`, 'utf8').includes(password), 'the password is not in the server\'s command line')
  const replies = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.on('data', (chunk) => { text += chunk.toString() })
    socket.once('error', reject)
    socket.once('end', () => resolve(text))
    socket.end(`PING\r\nAUTH wrong-password\r\nAUTH ${password}\r\nCONFIG GET save\r\nCONFIG GET appendonly\r\nQUIT\r\n`)
  })
  t.match(replies, /^-NOAUTH[^\r]*\r\n-WRONGPASS[^\r]*\r\n\+OK\r\n/, 'nothing without the password, refused with a wrong one, accepted with the Secret\'s')
  t.match(replies, '*2\r\n$4\r\nsave\r\n$0\r\n\r\n*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n', 'no snapshots, no append-only file')
  child.kill('SIGTERM')
  await exited
  t.same(readdirSync(directory), ['valkey-server'], 'nothing written in its working directory, even on shutdown')
})

test('deploy/kubernetes: only the proxy\'s pods may reach the Valkey, on its port', async (t) => {
  const all = manifests()
  const proxy = podOf(all, 'forward-proxy')
  const valkey = podOf(all, 'forward-proxy-redis')
  const policy = one(all, 'NetworkPolicy', 'forward-proxy-redis')
  t.same(at(policy, 'spec', 'podSelector'), { matchLabels: valkey.labels }, 'applies to the Valkey pod')
  t.match(at(policy, 'spec', 'policyTypes'), ['Ingress'])
  const containerPort = at(valkey.container, 'ports', 0, 'containerPort')
  t.same(at(policy, 'spec', 'ingress'), [{ from: [{ podSelector: { matchLabels: proxy.labels } }], ports: [{ protocol: 'TCP', port: containerPort }] }], 'from the proxy\'s pods of its namespace only, to its port only')
  const others = all.filter(({ object }) => object.kind === 'NetworkPolicy' && at(object, 'metadata', 'name') !== 'forward-proxy-redis')
  for (const { object } of others) {
    if (selects(at(object, 'spec', 'podSelector', 'matchLabels') ?? {}, valkey.labels)) t.equal(at(object, 'spec', 'ingress'), undefined, `${String(at(object, 'metadata', 'name'))} lets nothing else in`)
  }
  t.same(at(one(all, 'NetworkPolicy', 'forward-proxy'), 'spec', 'egress'), [{}], 'and the proxy\'s egress reaches it')
})
