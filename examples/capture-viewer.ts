// A live view of traffic capture: the proxy records what it forwards (`capture: {}`, no file) and
// the app keeps the last 100 entries, served on GET /captures on the same port as a HAR 1.2
// document (save it as a .har file to open it in a browser's Network panel).
//
// Run it with `npm run example:capture-viewer` (it builds, then runs
// dist/examples/capture-viewer.js), then:
//   curl -x http://alice:s3cret@127.0.0.1:8080 http://example.org/
//   curl -o last.har http://127.0.0.1:8080/captures
// PROXY_HOST and PROXY_PORT choose the address (default 127.0.0.1:8080, port 0 for any free port,
// printed in the "Server listening at" log line). ALLOWED_NETWORKS (comma-separated CIDRs) and
// ALLOWED_PORTS (comma-separated, default 80,443) open the destination policy, e.g. to an origin
// on this machine. GET /captures answers whoever reaches the port: keep it on loopback, or guard it.
import Fastify from 'fastify'
import { forwardProxy, type ForwardProxyCaptureEntry } from 'fastify-forward-proxy'

/** The last `size` entries: a fixed array written round, read oldest first. */
class LastEntries {
  readonly #size: number
  readonly #entries: ForwardProxyCaptureEntry[] = []
  #next = 0

  constructor (size: number) {
    this.#size = size
  }

  add (entry: ForwardProxyCaptureEntry): void {
    if (this.#entries.length < this.#size) this.#entries.push(entry)
    else this.#entries[this.#next] = entry
    this.#next = (this.#next + 1) % this.#size
  }

  /** Oldest first. */
  list (): ForwardProxyCaptureEntry[] {
    return [...this.#entries.slice(this.#next), ...this.#entries.slice(0, this.#next)]
  }
}

function listFromEnv (name: string): string[] | undefined {
  const value = process.env[name]
  return value === undefined || value === '' ? undefined : value.split(',').map((item) => item.trim())
}

async function main (): Promise<void> {
  const app = Fastify({ logger: true })
  const allowedNetworks = listFromEnv('ALLOWED_NETWORKS')

  await app.register(forwardProxy, {
    auth: { users: { alice: 's3cret' } },
    destinations: {
      allowedPorts: (listFromEnv('ALLOWED_PORTS') ?? ['80', '443']).map(Number),
      ...(allowedNetworks === undefined ? {} : { allowedNetworks })
    },
    // No file: entries go to captures() iterators only. Authorization, Cookie and Set-Cookie
    // values are written as [redacted]; Proxy-Authorization is never written.
    capture: { maxBodyBytes: 4096 }
  })

  // Entries completed from now on; this iterator ends when the server closes.
  const last = new LastEntries(100)
  const feed = app.forwardProxy.captures()
  void (async () => {
    for await (const entry of feed) last.add(entry)
  })()

  // The app's own route: origin-form requests reach it; it is not a proxy request, so not recorded.
  // `_dropped`: entries this iterator lost while it was behind (a HAR extension field).
  app.get('/captures', async () => ({
    log: { version: '1.2', creator: { name: 'capture-viewer', version: '1.0' }, entries: last.list(), _dropped: feed.dropped }
  }))

  await app.listen({ host: process.env.PROXY_HOST ?? '127.0.0.1', port: Number(process.env.PROXY_PORT ?? 8080) })
  const close = (): void => { void app.close().then(() => process.exit(0)) }
  process.once('SIGINT', close)
  process.once('SIGTERM', close)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
