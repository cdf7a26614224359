import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { parse as parseToml } from 'smol-toml'
import { parseDuration } from './duration.js'
import { isUuid } from '../uuid.js'

export class ConfigError extends Error {
  readonly key: string
  constructor(key: string, message: string) {
    super(`configuration: ${key}: ${message}`)
    this.name = 'ConfigError'
    this.key = key
  }
}

type Reader<T> = (value: unknown, key: string) => T

const durationReader: Reader<number> = (value, key) => {
  const parsed = parseDuration(value)
  if (parsed === undefined) throw new ConfigError(key, `expected a duration such as "30 days", got ${JSON.stringify(value)}`)
  return parsed
}

const integerReader =
  (min: number, max: number): Reader<number> =>
  (value, key) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new ConfigError(key, `expected an integer from ${min} to ${max}, got ${JSON.stringify(value)}`)
    }
    return value
  }

const positiveNumberReader: Reader<number> = (value, key) => {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ConfigError(key, `expected a positive number, got ${JSON.stringify(value)}`)
  }
  return value
}

const stringReader =
  (allowed?: readonly string[]): Reader<string> =>
  (value, key) => {
    if (typeof value !== 'string' || value === '' || (allowed !== undefined && !allowed.includes(value))) {
      const expected = allowed === undefined ? 'a non-empty string' : `one of ${allowed.join(', ')}`
      throw new ConfigError(key, `expected ${expected}, got ${JSON.stringify(value)}`)
    }
    return value
  }

/** A secret that is off unless set. */
const optionalStringReader: Reader<string | undefined> = (value, key) => {
  if (typeof value !== 'string' || value.length < 16) throw new ConfigError(key, 'expected a string of at least 16 characters')
  return value
}

/** A folder named by an absolute path, off unless set. */
const optionalFolderReader: Reader<string | undefined> = (value, key) => {
  if (typeof value !== 'string' || !isAbsolute(value) || value.includes('\0')) throw new ConfigError(key, `expected an absolute path, got ${JSON.stringify(value)}`)
  return resolve(value)
}

/** Folders named by absolute paths; unset, the caller picks the default (it depends on the data directory). */
const absolutePathsReader: Reader<readonly string[] | undefined> = (value, key) => {
  if (!Array.isArray(value) || value.length === 0 || !value.every((item): item is string => typeof item === 'string' && isAbsolute(item) && !item.includes('\0'))) {
    throw new ConfigError(key, `expected a non-empty array of absolute paths, got ${JSON.stringify(value)}`)
  }
  return value.map((item) => resolve(item))
}

/** A folder named by an absolute path, off unless set. */
const absolutePathReader: Reader<string | undefined> = (value, key) => {
  if (typeof value !== 'string' || !isAbsolute(value) || value.includes('\0')) throw new ConfigError(key, `expected an absolute path, got ${JSON.stringify(value)}`)
  return resolve(value)
}

/** A `[[proxies]]` entry: a backup proxy the reference would list, served as `/rest/v0/proxies`. */
export interface ProxyConfig {
  readonly id: string
  readonly name: string
  readonly url: string
  readonly version?: string
  readonly address?: string
  readonly vmUuid?: string
}

/** Without an `id`, one is derived from the name, so that it stays the same from one start to the next. */
function derivedId(name: string): string {
  const hex = createHash('sha256').update(`keel proxy\0${name}`).digest('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

const proxiesReader: Reader<readonly ProxyConfig[]> = (value, key) => {
  if (!Array.isArray(value)) throw new ConfigError(key, 'expected [[proxies]] tables')
  const proxies = value.map((item: unknown, index): ProxyConfig => {
    const at = `${key}[${index}]`
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new ConfigError(at, 'expected a table')
    const table = item as Record<string, unknown>
    for (const field of Object.keys(table)) {
      if (!['id', 'name', 'url', 'version', 'address', 'vmUuid'].includes(field)) throw new ConfigError(`${at}.${field}`, 'unknown key')
    }
    const name = stringReader()(table['name'], `${at}.name`)
    const url = stringReader()(table['url'], `${at}.url`)
    // The URL may carry the proxy's credentials: the message does not repeat it.
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new ConfigError(`${at}.url`, 'expected an http(s) URL')
    const optional = (field: string): Record<string, string> =>
      table[field] === undefined ? {} : { [field]: stringReader()(table[field], `${at}.${field}`) }
    const id = table['id'] === undefined ? derivedId(name) : stringReader()(table['id'], `${at}.id`)
    if (!isUuid(id)) throw new ConfigError(`${at}.id`, `expected a lower-case UUID, got ${JSON.stringify(id)}`)
    return { id, name, url, ...optional('version'), ...optional('address'), ...optional('vmUuid') }
  })
  const ids = new Set(proxies.map((proxy) => proxy.id))
  if (ids.size !== proxies.length) throw new ConfigError(key, 'two proxies have the same id (or name)')
  return proxies
}

/** TOML section → our field name, and each key's reader and default. */
const sections = {
  http: {
    field: 'http',
    keys: {
      host: { read: stringReader(), default: '127.0.0.1' },
      port: { read: integerReader(0, 65535), default: 8080 },
      maxJsonBodySize: { read: integerReader(1024, 1024 ** 3), default: 1024 * 1024 },
      idleTimeout: { read: durationReader, default: 5 * 60_000 },
      streamPause: { read: durationReader, default: 5 },
      maxHeavyListings: { read: integerReader(0, 10_000), default: 4 },
      maxQueuedHeavyListings: { read: integerReader(0, 100_000), default: 64 },
      /** a build of the reference's web application (XO 6), served at /v6/ */
      xo6Root: { read: absolutePathReader, default: undefined },
    },
  },
  'rest-api': {
    field: 'restApi',
    keys: {
      maxRamAllocatedPerSseClient: { read: positiveNumberReader, default: 20 },
      maxRamAllocatedForSseClients: { read: positiveNumberReader, default: 512 },
      ssePingInterval: { read: durationReader, default: 30_000 },
      eventResumeWindow: { read: durationReader, default: 5 * 60_000 },
      eventResumeMinimum: { read: durationReader, default: 60_000 },
      eventLogMaxEvents: { read: integerReader(0, 10_000_000), default: 100_000 },
      maxRamAllocatedToEventLog: { read: positiveNumberReader, default: 64 },
      streamCredentialCheckInterval: { read: durationReader, default: 10_000 },
    },
  },
  authentication: {
    field: 'authentication',
    keys: {
      defaultTokenValidity: { read: durationReader, default: durationReader('30 days', 'authentication.defaultTokenValidity') },
      maxTokenValidity: { read: durationReader, default: durationReader('0.5 year', 'authentication.maxTokenValidity') },
      failedLoginDelay: { read: durationReader, default: 1000 },
    },
  },
  tasks: {
    field: 'tasks',
    keys: { keep: { read: integerReader(0, 1_000_000), default: 1000 } },
  },
  lab: {
    field: 'lab',
    keys: { stepDelay: { read: durationReader, default: 400 } },
  },
  driver: {
    field: 'driver',
    keys: {
      kind: { read: stringReader(['lab', 'xapi']), default: 'lab' },
      disconnectGrace: { read: durationReader, default: 60_000 },
      record: { read: optionalFolderReader, default: undefined },
      recordMaxBytes: { read: integerReader(4096, 1024 ** 4), default: 256 * 1024 * 1024 },
      /** xapi: how long the host of a disk, VM, console or statistics transfer has to answer (0: no limit) */
      transferResponseTimeout: { read: durationReader, default: 60_000 },
      /** xapi: how long a transfer may move no byte either way once answered (0: no limit) */
      transferIdleTimeout: { read: durationReader, default: 5 * 60_000 },
    },
  },
  backups: {
    field: 'backups',
    keys: { repositoryRoots: { read: absolutePathsReader, default: undefined } },
  },
  metrics: {
    field: 'metrics',
    keys: { token: { read: optionalStringReader, default: undefined } },
  },
  servers: {
    field: 'servers',
    keys: {
      reconnectDelay: { read: durationReader, default: 1000 },
      maxReconnectDelay: { read: durationReader, default: 60_000 },
    },
  },
  log: {
    field: 'log',
    keys: {
      level: {
        read: stringReader(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
        default: 'info',
      },
      maxBufferedBytes: { read: integerReader(4096, 1024 ** 3), default: 16 * 1024 * 1024 },
    },
  },
} as const

type Sections = typeof sections
/** The configuration as Keel reads it: one field per section, each key typed by its reader. */
type SectionsConfig = {
  readonly [S in keyof Sections as Sections[S]['field']]: {
    readonly [K in keyof Sections[S]['keys']]: Sections[S]['keys'][K] extends { read: Reader<infer T> } ? T : never
  }
}

/** The sections, and the `[[proxies]]` array of tables. */
export type Config = SectionsConfig & { readonly proxies: readonly ProxyConfig[] }

export type ConfigOverrides = { [S in keyof SectionsConfig]?: Partial<SectionsConfig[S]> } & { proxies?: readonly ProxyConfig[] }

/**
 * Builds the configuration from defaults, then the TOML file, then overrides
 * (command-line flags). Unknown sections or keys and bad values stop the start
 * with a ConfigError naming the key.
 */
export function loadConfig(file?: string, overrides: ConfigOverrides = {}): Config {
  let document: Record<string, unknown> = {}
  if (file !== undefined) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (error) {
      throw new ConfigError(file, `cannot read: ${(error as Error).message}`)
    }
    try {
      document = parseToml(text) as Record<string, unknown>
    } catch (error) {
      throw new ConfigError(file, `not valid TOML: ${(error as Error).message}`)
    }
  }
  const result: Record<string, Record<string, unknown>> = {}
  for (const [name, section] of Object.entries(sections)) {
    const values: Record<string, unknown> = {}
    for (const [key, spec] of Object.entries(section.keys)) values[key] = spec.default
    result[section.field] = values
  }
  let proxies: readonly ProxyConfig[] = []
  for (const [name, value] of Object.entries(document)) {
    if (name === 'proxies') {
      proxies = proxiesReader(value, name)
      continue
    }
    const section = (sections as Record<string, (typeof sections)[keyof typeof sections]>)[name]
    if (section === undefined) throw new ConfigError(name, 'unknown section')
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigError(name, 'expected a table')
    const target = result[section.field] as Record<string, unknown>
    for (const [key, raw] of Object.entries(value)) {
      const spec = (section.keys as Record<string, { read: Reader<unknown> }>)[key]
      if (spec === undefined) throw new ConfigError(`${name}.${key}`, 'unknown key')
      target[key] = spec.read(raw, `${name}.${key}`)
    }
  }
  const { proxies: proxiesOverride, ...sectionOverrides } = overrides
  for (const [field, values] of Object.entries(sectionOverrides)) {
    Object.assign(result[field] as Record<string, unknown>, values)
  }
  const config = { ...result, proxies: proxiesOverride ?? proxies } as Config
  if (config.authentication.defaultTokenValidity > config.authentication.maxTokenValidity) {
    throw new ConfigError('authentication.defaultTokenValidity', 'must not exceed authentication.maxTokenValidity')
  }
  return config
}
