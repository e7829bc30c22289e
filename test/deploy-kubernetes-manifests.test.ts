import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import { test } from 'tap'
import { parseAllDocuments } from 'yaml'
import { loadConfigFile } from '../lib/cli/config'
import { parseDockerfile } from './helpers/dockerfile'
import { kubernetesObjectProblems } from './helpers/kubernetes-schema'

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
interface Volume { name: string, secret?: { secretName: string, defaultMode?: number, items?: Array<{ key: string, path: string }> }, configMap?: object, emptyDir?: object }
interface EnvVar { name: string, valueFrom?: { secretKeyRef?: { name: string, key: string } } }

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

  const files = [config.interception?.ca?.cert, config.interception?.ca?.key, ...Object.values(config.secrets ?? {}).map((secret) => secret.file)].filter((path): path is string => path !== undefined)
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
