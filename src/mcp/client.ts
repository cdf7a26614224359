import type { BridgeConfig, Credentials } from './config.js'

/**
 * The bridge's only way out: GET requests to the REST API under /rest/v0.
 * Every failure becomes a BridgeError whose message tells a person what to
 * fix; the tools hand that message to the assistant as is.
 */

const API_BASE = '/rest/v0'
const MAX_REDIRECTS = 5

export type QueryValue = string | number | boolean | undefined
export type Query = Readonly<Record<string, QueryValue>>

export type FailureKind = 'config' | 'network' | 'timeout' | 'auth' | 'forbidden' | 'not-found' | 'http' | 'protocol'

export class BridgeError extends Error {
  readonly kind: FailureKind
  constructor(kind: FailureKind, message: string) {
    super(message)
    this.name = 'BridgeError'
    this.kind = kind
  }
}

interface ErrorBody {
  error?: unknown
  code?: unknown
  data?: { missingPrivileges?: Array<{ resource?: unknown; action?: unknown }> }
}

function describeCredentials(credentials: Credentials): string {
  return credentials.kind === 'token' ? `the token in ${credentials.variable}` : `user ${credentials.username}`
}

/** The base URL, or a BridgeError explaining what is wrong with it. */
function parseBase(config: BridgeConfig): URL | BridgeError {
  const example = `e.g. http://${config.url.replace(/^[a-z][a-z0-9+.-]*:\/*/i, '')}`
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(config.url)) {
    return new BridgeError('config', `${config.urlVariable} is "${config.url}", which has no protocol: write it with http:// or https:// (${example}).`)
  }
  let url: URL
  try {
    url = new URL(config.url)
  } catch {
    return new BridgeError('config', `${config.urlVariable} is "${config.url}", which is not a valid URL (${example}).`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return new BridgeError('config', `${config.urlVariable} uses the protocol ${url.protocol.slice(0, -1)}; only http:// and https:// are supported (${example}).`)
  }
  return url
}

/** The system error code behind a failed fetch (`ECONNREFUSED`, `ENOTFOUND`, ...), when there is one. */
function networkCode(error: unknown): string | undefined {
  let cause: unknown = (error as { cause?: unknown }).cause
  for (let depth = 0; depth < 3 && cause !== undefined && cause !== null; depth++) {
    const code = (cause as { code?: unknown }).code
    if (typeof code === 'string') return code
    // Happy-eyeballs connections fail with an AggregateError of one error per address.
    const errors = (cause as { errors?: unknown }).errors
    cause = Array.isArray(errors) ? errors[0] : (cause as { cause?: unknown }).cause
  }
  return undefined
}

function errorText(body: ErrorBody | undefined, fallback: string): string {
  return typeof body?.error === 'string' && body.error !== '' ? body.error : fallback
}

export class RestClient {
  readonly #config: BridgeConfig
  readonly #base: URL | BridgeError
  readonly #fetch: typeof fetch

  constructor(config: BridgeConfig, fetchImpl: typeof fetch = fetch) {
    this.#config = config
    this.#base = parseBase(config)
    this.#fetch = fetchImpl
  }

  /** What the service is and how we log in, for messages and the server's instructions. */
  get description(): string {
    return `${this.#config.url} as ${describeCredentials(this.#config.credentials)}`
  }

  /** What is wrong with the configured URL, if anything: every request will fail with it. */
  get problem(): string | undefined {
    return this.#base instanceof BridgeError ? this.#base.message : undefined
  }

  /** GET /rest/v0<path> and its JSON body. */
  async get<T = unknown>(path: string, query: Query = {}): Promise<T> {
    if (this.#base instanceof BridgeError) throw this.#base
    let url = new URL(this.#base.pathname.replace(/\/$/, '') + API_BASE + path, this.#base)
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(name, String(value))
    }
    for (let redirects = 0; ; redirects++) {
      const response = await this.#send(url)
      const location = response.headers.get('location')
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel()
        url = this.#redirectTarget(url, location, redirects)
        continue
      }
      const text = await this.#read(response, url)
      if (!response.ok) throw this.#httpError(response, text)
      try {
        return JSON.parse(text) as T
      } catch {
        throw new BridgeError('protocol', `Keel returned invalid JSON for GET ${url.pathname}${url.search}.`)
      }
    }
  }

  async #send(url: URL): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' }
    const { credentials } = this.#config
    if (credentials.kind === 'token') headers['cookie'] = `authenticationToken=${credentials.token}`
    else headers['authorization'] = 'Basic ' + Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')
    try {
      // Redirects are followed by hand: fetch would carry the cookie to any other host.
      return await this.#fetch(url, { method: 'GET', headers, redirect: 'manual', signal: AbortSignal.timeout(this.#config.timeoutMs) })
    } catch (error) {
      throw this.#transportError(error)
    }
  }

  async #read(response: Response, url: URL): Promise<string> {
    try {
      return await response.text()
    } catch (error) {
      const failure = this.#transportError(error)
      if (failure.kind === 'timeout') throw failure
      throw new BridgeError(
        'network',
        `The connection to Keel at ${this.#config.url} broke while reading the answer to GET ${url.pathname} (${networkCode(error) ?? (error as Error).message}).`,
      )
    }
  }

  #redirectTarget(from: URL, location: string, redirects: number): URL {
    if (redirects >= MAX_REDIRECTS) throw new BridgeError('protocol', `Too many redirects from ${from.pathname} (more than ${MAX_REDIRECTS}).`)
    const target = new URL(location, from)
    if (target.origin !== from.origin) {
      throw new BridgeError(
        'protocol',
        `Keel redirected ${from.pathname} to another server (${target.origin}); the bridge does not send credentials there. Set ${this.#config.urlVariable} to that server's URL if it is the right one.`,
      )
    }
    return target
  }

  #transportError(error: unknown): BridgeError {
    const name = (error as { name?: unknown }).name
    if (name === 'TimeoutError' || name === 'AbortError') {
      return new BridgeError(
        'timeout',
        `Request to Keel at ${this.#config.url} timed out after ${this.#config.timeoutMs} ms. The service may be overloaded or a firewall may be dropping the connection.`,
      )
    }
    const code = networkCode(error)
    const detail = code ?? (error as Error).message
    const hint =
      code === 'ENOTFOUND' || code === 'EAI_AGAIN'
        ? 'the host name does not resolve'
        : code === 'ECONNREFUSED'
          ? 'nothing is listening there'
          : code !== undefined && /CERT|SSL|TLS|UNABLE_TO_VERIFY|SIGNATURE/.test(code)
            ? 'the TLS certificate is not accepted (expired, for another host name, or from an unknown authority: for a private CA, set NODE_EXTRA_CA_CERTS)'
            : 'the service is unreachable'
    return new BridgeError(
      'network',
      `Cannot connect to Keel at ${this.#config.url} (${detail}): ${hint}. Check ${this.#config.urlVariable} and that the service is running.`,
    )
  }

  #httpError(response: Response, text: string): BridgeError {
    let body: ErrorBody | undefined
    try {
      body = JSON.parse(text) as ErrorBody
    } catch {
      body = undefined
    }
    const { status } = response
    const { credentials } = this.#config
    if (status === 401) {
      const message =
        credentials.kind === 'token'
          ? `Authentication failed: Keel refused the token in ${credentials.variable}; it is wrong, has expired or has been revoked. Create a new token (keel token create, or POST /rest/v0/users/me/authentication_tokens) and update ${credentials.variable}.`
          : `Authentication failed: Keel refused the username and password in ${credentials.variables} (user ${credentials.username}). Check both values.`
      return new BridgeError('auth', message)
    }
    if (status === 403) {
      const missing = (body?.data?.missingPrivileges ?? [])
        .map((privilege) => `${String(privilege.resource)}:${String(privilege.action)}`)
        .join(', ')
      const who = describeCredentials(credentials)
      const message =
        missing !== ''
          ? `Permission denied: ${who} lacks the privilege ${missing}. Ask an administrator to grant it through a role, or use an administrator account.`
          : `Permission denied: ${errorText(body, 'forbidden')}. This needs an administrator account; ${who} is not one.`
      return new BridgeError('forbidden', message)
    }
    if (status === 404) return new BridgeError('not-found', `Not found: ${errorText(body, 'the object or route does not exist')}.`)
    const reason = `${status}${response.statusText === '' ? '' : ' ' + response.statusText}`
    return new BridgeError('http', `Keel API error (${reason}): ${errorText(body, text.slice(0, 500) || 'no details')}`)
  }
}
