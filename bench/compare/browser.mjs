// Headless Chromium (Debian package chromium) as a client of the per-request suite: a page of the
// origin, loaded through the proxy, fetches from its own origin with `connections` fetches in
// flight, the way a web application polls its API. The browser decides how many connections it
// opens (for HTTP/1.1 at most 6 per destination, through a proxy as direct) and when it closes
// them. Driven over the DevTools protocol (CDP), which also answers the proxy's 407 once, as a
// user typing the credentials would; the browser then sends them on every request and CONNECT.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { WebSocket } from 'undici'

/**
 * Chromium's options: headless, a fresh profile, every request through the proxy (loopback
 * included) or none, and none of its own background traffic that a flag can turn off
 * ({@link QUIET_CHROMIUM_ARGS}).
 */
function chromiumArgs (profile, proxyPort, insecure) {
  return [
    ...HEADLESS_CHROMIUM_ARGS,
    `--user-data-dir=${profile}`,
    '--remote-debugging-port=0',
    ...(proxyPort === undefined ? [] : [`--proxy-server=http://127.0.0.1:${proxyPort}`, '--proxy-bypass-list=<-loopback>']),
    // The intercepting proxies' leaves are signed by a CA the browser's store does not hold (hey
    // verifies nothing either); direct, the origin's by the destination CA.
    ...(insecure ? ['--ignore-certificate-errors'] : []),
    ...QUIET_CHROMIUM_ARGS,
    'about:blank'
  ]
}

/** Headless, in a container: what the browser tests (test/browser/) start Chromium with too. */
export const HEADLESS_CHROMIUM_ARGS = [
  '--headless=new',
  // Root in CI containers needs it, and non-root containers often lack the user namespaces the
  // sandbox wants; the browser only loads pages of the origins the tests and benchmarks start.
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage'
]

/**
 * The options that turn off the traffic Chromium makes on its own, as far as flags can (its
 * sign-in and default search engine still connect at start; the proxies refuse them). The
 * browser tests (test/browser/) start Chromium with them too.
 */
export const QUIET_CHROMIUM_ARGS = [
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  // Component updates that ignore --disable-component-update (on-demand installers) would
  // still POST to update.googleapis.com; an update URL that cannot be fetched stops them.
  '--component-updater=url-source=data:',
  // The network time tracker's GET http://clients2.google.com/time/1/current.
  '--disable-features=NetworkTimeServiceQuerying',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
  '--disable-domain-reliability',
  '--disable-client-side-phishing-detection',
  '--disable-breakpad',
  '--metrics-recording-only',
  '--disable-quic'
]

/** A DevTools protocol connection: `send` resolves with a command's result, `on` hears events. */
async function openDevTools (endpoint) {
  const socket = new WebSocket(endpoint)
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true })
    socket.addEventListener('error', () => reject(new Error(`DevTools: cannot connect to ${endpoint}`)), { once: true })
  })
  let nextId = 1
  const pending = new Map()
  const listeners = new Map()
  socket.addEventListener('message', ({ data }) => {
    const message = JSON.parse(String(data))
    if (message.id === undefined) {
      listeners.get(message.method)?.(message.params, message.sessionId)
      return
    }
    const { resolve, reject, method } = pending.get(message.id)
    pending.delete(message.id)
    if (message.error !== undefined) reject(new Error(`DevTools ${method}: ${message.error.message}`))
    else resolve(message.result)
  })
  // A command whose answer never came (Browser.close's, say) fails when the browser hangs up.
  socket.addEventListener('close', () => {
    for (const { reject, method } of pending.values()) reject(new Error(`DevTools ${method}: the browser closed the connection`))
    pending.clear()
  })
  return {
    send (method, params = {}, sessionId) {
      const id = nextId++
      socket.send(JSON.stringify({ id, method, params, sessionId }))
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }))
    },
    on (method, listener) { listeners.set(method, listener) },
    close () { socket.close() }
  }
}

/** The browser's DevTools address, from the file Chromium writes into its profile once it listens. */
async function devToolsEndpoint (profile, child, output) {
  const file = join(profile, 'DevToolsActivePort')
  for (let waited = 0; waited < 30_000; waited += 50) {
    if (child.exitCode !== null || child.pid === undefined) throw new Error(`chromium exited (${child.exitCode ?? 'not started'}) before it listened: ${output().slice(-500)}`)
    try {
      const [port, path] = readFileSync(file, 'utf8').split('\n')
      if (port !== undefined && path !== undefined && path !== '') return `ws://127.0.0.1:${port}${path}`
    } catch {}
    await delay(50)
  }
  throw new Error('chromium did not open its DevTools port within 30 s')
}

/**
 * Runs in the page: `parallel` loops, each fetching `url?n` (n counting up across loops) and
 * reading the body, until `seconds` have passed; resolves with the 2xx answers, the others and
 * the failed fetches (the first failure's text), and the p50 and p99 in ms of the 2xx ones.
 */
const PAGE_LOAD = `async (url, parallel, seconds) => {
  const times = []
  let errors = 0
  let firstError
  let n = 0
  const end = performance.now() + seconds * 1000
  const loop = async () => {
    while (performance.now() < end) {
      const started = performance.now()
      try {
        const response = await fetch(url + '?' + (++n), { cache: 'no-store' })
        await response.arrayBuffer()
        if (response.status >= 200 && response.status < 300) times.push(performance.now() - started)
        else { errors++; firstError ??= String(response.status) }
      } catch (error) {
        errors++
        firstError ??= String(error)
      }
    }
  }
  await Promise.all(Array.from({ length: parallel }, loop))
  times.sort((a, b) => a - b)
  const at = (q) => times.length === 0 ? NaN : times[Math.min(times.length - 1, Math.floor(q * times.length))]
  return { requests: times.length, errors, firstError, p50: at(0.5), p99: at(0.99) }
}`

/**
 * Starts headless Chromium, opens `url` through the proxy on 127.0.0.1:`proxyPort` (direct when
 * undefined), answering its 407 with `proxyUser` ({ name, password }) when given, then has the
 * page fetch `url` for `duration` s with `connections` fetches in flight. `insecure`: accept any
 * certificate (https:// through an intercepting proxy). Resolves with the suite's result shape;
 * the page's own load is not counted. The browser and its profile are gone when it
 * settles.
 */
export async function runBrowser (chromiumPath, url, proxyPort, duration, connections, { proxyUser, insecure = false } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'ffp-browser-'))
  // Its own process group: Chromium forks zygote, network, renderer and GPU processes.
  const child = spawn(chromiumPath, chromiumArgs(profile, proxyPort, insecure), { detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, HOME: profile } })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr += chunk })
  // 'error' without 'exit' when it could not be started at all.
  const exited = new Promise((resolve) => { child.once('exit', resolve); child.once('error', resolve) })
  let devTools
  try {
    devTools = await openDevTools(await devToolsEndpoint(profile, child, () => stderr))
    const { targetId } = await devTools.send('Target.createTarget', { url: 'about:blank' })
    const { sessionId } = await devTools.send('Target.attachToTarget', { targetId, flatten: true })
    await answerProxyAuthentication(devTools, sessionId, proxyUser)
    await devTools.send('Page.enable', {}, sessionId)
    const loaded = new Promise((resolve) => devTools.on('Page.loadEventFired', (_params, from) => { if (from === sessionId) resolve() }))
    const navigation = await devTools.send('Page.navigate', { url }, sessionId)
    if (navigation.errorText !== undefined) throw new Error(`chromium could not open ${url}: ${navigation.errorText}`)
    await loaded
    await devTools.send('Fetch.disable', {}, sessionId)
    const started = process.hrtime.bigint()
    const { result, exceptionDetails } = await devTools.send('Runtime.evaluate', {
      expression: `(${PAGE_LOAD})(${JSON.stringify(url)}, ${connections}, ${duration})`,
      awaitPromise: true,
      returnByValue: true
    }, sessionId)
    if (exceptionDetails !== undefined) throw new Error(`the page's fetch loop failed: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`)
    const seconds = Number(process.hrtime.bigint() - started) / 1e9
    const { requests, errors, firstError, p50, p99 } = result.value
    return { requests, reqPerSec: requests / seconds, p50: p50 ?? NaN, p99: p99 ?? NaN, mbPerSec: NaN, errors, firstError, client: 'chromium' }
  } finally {
    // Closed through DevTools, Chromium waits for its own processes, so their CPU is counted as
    // the client's (bench/compare/processes.mjs's endedChildrenCpuSeconds); killed, it would not.
    const closed = devTools?.send('Browser.close').catch(() => {})
    if (await Promise.race([exited.then(() => true), delay(10_000, false, { ref: false })]) === false) {
      try { process.kill(-child.pid, 'SIGKILL') } catch {}
      await exited
    }
    // Anything of the group still there (it should all be gone) goes too.
    try { process.kill(-child.pid, 'SIGKILL') } catch {}
    await closed
    devTools?.close()
    rmSync(profile, { recursive: true, force: true })
  }
}

/**
 * Answers the proxy's 407s to the page's requests with `proxyUser` until the page has loaded
 * (the caller turns the interception off then): Chromium keeps the credentials for the proxy and
 * sends them unasked from then on. Every request the page makes meanwhile is let through as is.
 */
async function answerProxyAuthentication (devTools, sessionId, proxyUser) {
  devTools.on('Fetch.requestPaused', ({ requestId }, from) => {
    if (from === sessionId) devTools.send('Fetch.continueRequest', { requestId }, sessionId).catch(() => {})
  })
  devTools.on('Fetch.authRequired', ({ requestId, authChallenge }, from) => {
    if (from !== sessionId) return
    const answer = proxyUser !== undefined && authChallenge.source === 'Proxy'
      ? { response: 'ProvideCredentials', username: proxyUser.name, password: proxyUser.password }
      : { response: 'CancelAuth' }
    devTools.send('Fetch.continueWithAuth', { requestId, authChallengeResponse: answer }, sessionId).catch(() => {})
  })
  await devTools.send('Fetch.enable', { handleAuthRequests: true }, sessionId)
}
