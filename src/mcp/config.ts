/**
 * The bridge's configuration, read once from the environment. Every setting
 * has a Keel name and the reference product's name (`XO_*`), so the bridge
 * drops into setups written for either; the Keel name wins when both are set.
 */

export const DEFAULT_TIMEOUT_MS = 30_000

export type Credentials =
  | { readonly kind: 'token'; readonly token: string; readonly variable: string }
  | { readonly kind: 'password'; readonly username: string; readonly password: string; readonly variables: string }

export interface BridgeConfig {
  /** KEEL_URL as given, without trailing slashes */
  readonly url: string
  readonly urlVariable: string
  readonly credentials: Credentials
  readonly timeoutMs: number
}

export class ConfigError extends Error {
  /** the process exit code: usage errors are 2, as for `keel` itself */
  readonly exitCode = 2
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

type Env = Readonly<Record<string, string | undefined>>

interface Setting {
  readonly value: string | undefined
  /** the variable the value came from, or the Keel name when unset */
  readonly variable: string
}

function setting(env: Env, name: string): Setting {
  for (const variable of [`KEEL_${name}`, `XO_${name}`]) {
    const value = env[variable]?.trim()
    if (value !== undefined && value !== '') return { value, variable }
  }
  return { value: undefined, variable: `KEEL_${name}` }
}

function readTimeout(env: Env): number {
  const raw = env['KEEL_MCP_TIMEOUT_MS']?.trim()
  if (raw === undefined || raw === '') return DEFAULT_TIMEOUT_MS
  const value = Number(raw)
  if (!/^\d+$/.test(raw) || value < 1) {
    throw new ConfigError(`KEEL_MCP_TIMEOUT_MS must be a positive whole number of milliseconds, got ${JSON.stringify(raw)}`)
  }
  return value
}

/**
 * The configuration, or a ConfigError whose message lists every missing
 * variable at once, so a person fixes the setup in one go.
 * A URL without a protocol is accepted here on purpose: the assistant then
 * reports it on each tool call, where the person is looking (MCP hosts tend
 * to hide a server's stderr).
 */
export function readConfig(env: Env): BridgeConfig {
  const url = setting(env, 'URL')
  const token = setting(env, 'TOKEN')
  const username = setting(env, 'USERNAME')
  const password = setting(env, 'PASSWORD')

  const missing: string[] = []
  if (url.value === undefined) missing.push('KEEL_URL (or XO_URL): the base URL of the service, with its protocol, e.g. https://keel.example.net')
  if (token.value === undefined && (username.value === undefined || password.value === undefined)) {
    const lacking = [username, password].filter((s) => s.value === undefined).map((s) => s.variable)
    missing.push(
      `KEEL_TOKEN (or XO_TOKEN), or both KEEL_USERNAME and KEEL_PASSWORD (or XO_USERNAME and XO_PASSWORD); ` +
        (lacking.length === 2 ? 'none is set' : `${lacking.join(' and ')} is not set`),
    )
  }
  if (missing.length > 0 || url.value === undefined) {
    throw new ConfigError(`missing configuration:\n  - ${missing.join('\n  - ')}`)
  }

  // The token wins, as in the reference bridge: it is the narrower credential.
  const credentials: Credentials =
    token.value !== undefined
      ? { kind: 'token', token: token.value, variable: token.variable }
      : {
          kind: 'password',
          username: username.value as string,
          password: password.value as string,
          variables: `${username.variable} and ${password.variable}`,
        }

  return { url: url.value.replace(/\/+$/, ''), urlVariable: url.variable, credentials, timeoutMs: readTimeout(env) }
}
