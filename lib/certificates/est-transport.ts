import { Agent, request } from 'undici'
import { ForwardProxyEstError } from './est-error'

/** How the transport reaches and authenticates to the EST server. */
export interface EstTransportSettings {
  /** `https://host[:port]/.well-known/est[/label]` without a trailing slash. */
  readonly base: string
  readonly username?: string | undefined
  readonly password?: string | undefined
  readonly clientCert?: string | Buffer | undefined
  readonly clientKey?: string | Buffer | undefined
  readonly clientKeyPassphrase?: string | undefined
  readonly ca?: string | Buffer | ReadonlyArray<string | Buffer> | undefined
  readonly maxResponseBytes: number
}

/** One EST answer: its status, headers and (bounded) body. */
export interface EstResponse {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: Buffer
}

/**
 * HTTPS to the EST server (RFC 7030 3.2): undici with the EST trust anchors and, when given,
 * the client certificate; HTTP Basic credentials are sent only over that TLS connection. The
 * credentials live in this closure only: no error, log or inspect output shows them.
 */
export class EstTransport {
  readonly #base: string
  readonly #agent: Agent
  readonly #authorization: string | undefined
  readonly #secrets: readonly string[]
  readonly #maxResponseBytes: number

  constructor (settings: EstTransportSettings) {
    this.#base = settings.base
    this.#maxResponseBytes = settings.maxResponseBytes
    const ca = settings.ca === undefined ? undefined : (Array.isArray(settings.ca) ? [...settings.ca] : settings.ca as string | Buffer)
    this.#agent = new Agent({
      connect: {
        rejectUnauthorized: true,
        ...(ca === undefined ? {} : { ca }),
        ...(settings.clientCert === undefined ? {} : { cert: settings.clientCert, key: settings.clientKey }),
        ...(settings.clientKeyPassphrase === undefined ? {} : { passphrase: settings.clientKeyPassphrase })
      },
      maxResponseSize: settings.maxResponseBytes
    })
    if (settings.username !== undefined && settings.password !== undefined) {
      const token = Buffer.from(`${settings.username}:${settings.password}`).toString('base64')
      this.#authorization = `Basic ${token}`
      this.#secrets = [settings.password, token].filter((secret) => secret.length >= 4)
    } else {
      this.#authorization = undefined
      this.#secrets = []
    }
  }

  /**
   * GETs or POSTs `operation` (`cacerts`, `simpleenroll`). Resolves with any status; rejects
   * only when no answer came (`est_unreachable`, or `est_timeout` when `signal` aborted).
   */
  async send (operation: string, signal: AbortSignal, body?: Buffer): Promise<EstResponse> {
    const headers: Record<string, string> = {}
    if (this.#authorization !== undefined) headers.authorization = this.#authorization
    if (body !== undefined) {
      headers['content-type'] = 'application/pkcs10'
      headers['content-transfer-encoding'] = 'base64'
    }
    try {
      const response = await request(`${this.#base}/${operation}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers,
        ...(body === undefined ? {} : { body: body.toString('base64') }),
        dispatcher: this.#agent,
        signal
      })
      const chunks: Buffer[] = []
      for await (const chunk of response.body) chunks.push(chunk as Buffer)
      return { status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) }
    } catch (error) {
      if (signal.aborted) throw new ForwardProxyEstError('est_timeout', `EST ${operation} at ${this.#base}: no answer within the timeout`)
      throw new ForwardProxyEstError('est_unreachable', `EST ${operation} at ${this.#base} failed: ${this.redact(describe(error))}`)
    }
  }

  /** `text` with the password and the Basic token replaced, for error messages. */
  redact (text: string): string {
    return this.#secrets.reduce((result, secret) => result.split(secret).join('[redacted]'), text)
  }

  /** Closes the connections to the EST server; requests under way fail. */
  async close (): Promise<void> {
    await this.#agent.destroy()
  }
}

function describe (error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = (error as Error & { cause?: unknown }).cause
  const code = (error as Error & { code?: unknown }).code
  const own = `${error.message}${typeof code === 'string' ? ` (${code})` : ''}`
  return cause instanceof Error ? `${own}: ${describe(cause)}` : own
}
