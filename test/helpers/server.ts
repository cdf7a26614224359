import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { createApp, type App, type AppOptions } from '../../src/app.js'
import { loadConfig, type ConfigOverrides } from '../../src/config/config.js'
import { LabDriver } from '../../src/driver/lab/driver.js'
import type { LabSpec } from '../../src/driver/lab/spec.js'
import type { Driver } from '../../src/driver/types.js'
import type { XapiDriverOptions } from '../../src/driver/xapi/driver.js'
import type { PoolConnectionSettings } from '../../src/driver/xapi/types.js'
import { openSimulator, type Simulator } from '../../src/simulator/simulator.js'
import { LaggedDriver, randomDelays } from '../driver/lagged-driver.js'

export const ADMIN_EMAIL = 'admin@admin.net'
export const ADMIN_PASSWORD = 'test-admin-password'
const SIMULATOR_PASSWORD = 'simulator-test-password'

/** A clock tests move by hand, so expiry is tested without sleeping. */
export class ManualClock {
  now = Date.UTC(2026, 10, 22, 12, 0, 0)
  readonly read = (): number => this.now
  advance(ms: number): void {
    this.now += ms
  }
}

export interface TestServer {
  readonly url: string
  readonly app: App
  readonly dataDir: string
  readonly clock: ManualClock
  /** under KEEL_TEST_DRIVER=xapi, the lab the simulator serves as the pool */
  readonly poolLab?: LabDriver
  /** the data directory of the lab that holds the disks: the server's, or under xapi the simulator's */
  readonly labDataDir: string
  /** fetch relative to the server, as the administrator unless `auth` says otherwise */
  request(path: string, init?: RequestInit & { auth?: string | null }): Promise<Response>
  json<T = unknown>(path: string, init?: RequestInit & { auth?: string | null }): Promise<{ status: number; body: T; response: Response }>
  close(options?: { keepData?: boolean }): Promise<void>
}

export const basic = (email: string, password: string): string =>
  'Basic ' + Buffer.from(`${email}:${password}`).toString('base64')

export interface StartOptions {
  dataDir?: string
  config?: ConfigOverrides
  app?: Partial<AppOptions>
  clock?: ManualClock
  /** under xapi, ms a step of the simulator's lab takes (default 1): the lab's `stepDelay` for the pool behind the driver */
  simulatorStepDelay?: number
  /**
   * false: each request of `request` and `json` on a connection of its own (`connection: close`), for
   * a test that blocks its process (an outside tool run with spawnSync) past the server's 5 s
   * keep-alive: fetch would reuse a pooled socket the server closes as the process wakes, and the
   * request would fail with ECONNRESET (issue 28).
   */
  keepAlive?: boolean
}

/**
 * `KEEL_TEST_DRIVER=lagged` runs every server over the lab behind a lagged
 * index (test/driver/lagged-driver.ts): changes show up to
 * `KEEL_TEST_LAG_MAX` ms late (10 by default), out of step, from the seed
 * `KEEL_TEST_LAG_SEED` (random, printed, by default).
 */
function testDriver(): ((lab: Driver) => Driver) | undefined {
  const kind = process.env['KEEL_TEST_DRIVER'] ?? 'lab'
  if (kind === 'lab' || kind === 'xapi') return undefined
  if (kind !== 'lagged') throw new Error(`KEEL_TEST_DRIVER: unknown driver ${kind} (lab, lagged or xapi)`)
  const max = Number(process.env['KEEL_TEST_LAG_MAX'] ?? 10)
  const seed = Number(process.env['KEEL_TEST_LAG_SEED'] ?? Math.floor(Math.random() * 2 ** 31))
  process.stderr.write(`keel test server: lagged driver, KEEL_TEST_LAG_SEED=${seed} KEEL_TEST_LAG_MAX=${max}\n`)
  return (lab) => new LaggedDriver(lab, { delay: randomDelays(seed, max) })
}

/**
 * `KEEL_TEST_DRIVER=xapi` runs every server over the XAPI driver, connected
 * to simulators (`keel lab xapi`) of its own on the demo lab (or the server's
 * `labSpec`), one per pool since a XAPI host serves one pool, kept in the
 * server's data directory (so a server started again on it finds the same
 * pools) and stopped with the server.
 */
async function xapiPool(dataDir: string, spec: LabSpec | undefined, clock: () => number, stepDelay = 1): Promise<{ options: XapiDriverOptions; lab: LabDriver; dataDir: string; close: () => Promise<void> } | undefined> {
  if (process.env['KEEL_TEST_DRIVER'] !== 'xapi') return undefined
  const root = join(dataDir, 'xapi-simulator')
  mkdirSync(root, { recursive: true })
  const kept = readdirSync(root).length
  const specs: Array<LabSpec | undefined> = spec === undefined ? Array.from({ length: Math.max(kept, 1) }, () => undefined) : spec.pools.map((pool) => ({ pools: [pool] }))
  const simulators: Simulator[] = []
  const close = async (): Promise<void> => {
    await Promise.all(simulators.map((simulator) => simulator.close()))
  }
  const pools: PoolConnectionSettings[] = []
  try {
    for (const [index, poolSpec] of specs.entries()) {
      const simulator = await openSimulator({ dataDir: join(root, String(index)), password: SIMULATOR_PASSWORD, stepDelay, clock, ...(poolSpec === undefined ? {} : { spec: poolSpec }) })
      simulators.push(simulator)
      pools.push({ host: await simulator.listen(0, '127.0.0.1'), username: 'root', password: SIMULATOR_PASSWORD, allowUnauthorized: false, readOnly: false })
    }
  } catch (error) {
    await close()
    throw error
  }
  const [first] = simulators
  if (first === undefined) throw new Error('no simulator')
  return { options: { allowHttp: true, graceDelay: 0, index: { retryDelay: 20 }, pools, clock }, lab: first.services.driver, dataDir: join(root, '0'), close }
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'keel-test-'))
  const clock = options.clock ?? new ManualClock()
  const pool = await xapiPool(dataDir, options.app?.labSpec, clock.read, options.simulatorStepDelay)
  const config = loadConfig(undefined, {
    ...options.config,
    authentication: { failedLoginDelay: 20, ...options.config?.authentication },
    lab: { stepDelay: 1, ...options.config?.lab },
    ...(pool === undefined ? {} : { driver: { kind: 'xapi', ...options.config?.driver } }),
  })
  const lag = testDriver()
  const wrap = options.app?.wrapDriver
  const app = await createApp({
    dataDir,
    config,
    clock: clock.read,
    logger: pino({ level: 'silent' }),
    adminEmail: ADMIN_EMAIL,
    adminPassword: ADMIN_PASSWORD,
    ...options.app,
    ...(lag === undefined ? {} : { wrapDriver: (lab: Driver) => lag(wrap?.(lab) ?? lab) }),
    ...(pool === undefined ? {} : { xapi: { ...pool.options, ...options.app?.xapi } }),
  }).catch(async (error: unknown) => {
    await pool?.close()
    // A service refusing to start (a test of exactly that) leaves no folder of ours behind.
    if (options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true })
    throw error
  })
  const url = await app.listen(0, '127.0.0.1')
  const adminAuth = basic(ADMIN_EMAIL, ADMIN_PASSWORD)
  const request: TestServer['request'] = (path, init = {}) => {
    const { auth, ...rest } = init
    const headers = new Headers(rest.headers)
    if (auth !== null && !headers.has('authorization') && !headers.has('cookie')) {
      headers.set('authorization', auth ?? adminAuth)
    }
    if (options.keepAlive === false && !headers.has('connection')) headers.set('connection', 'close')
    return fetch(url + path, { redirect: 'manual', ...rest, headers })
  }
  // A test closes its server itself; a teardown closing it again (after a failure midway) waits for the same close.
  let closing: Promise<void> | undefined
  const server: TestServer = {
    url,
    app,
    dataDir,
    clock,
    labDataDir: pool?.dataDir ?? dataDir,
    ...(pool === undefined ? {} : { poolLab: pool.lab }),
    request,
    async json<T>(path: string, init?: RequestInit & { auth?: string | null }) {
      const response = await request(path, init)
      const text = await response.text()
      return { status: response.status, body: (text === '' ? undefined : JSON.parse(text)) as T, response }
    },
    async close(closeOptions = {}) {
      closing ??= app.close().finally(() => pool?.close())
      await closing
      if (closeOptions.keepData !== true && options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true })
    },
  }
  return server
}

export function jsonBody(value: unknown, method = 'POST'): RequestInit {
  return { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) }
}

/**
 * A server, and the lab under whatever driver the suite runs
 * (KEEL_TEST_DRIVER=lagged), or the lab the simulator serves as the pool
 * (KEEL_TEST_DRIVER=xapi), for changes a pool makes on its own.
 */
export async function startLabServer(options: StartOptions = {}): Promise<{ server: TestServer; lab: LabDriver }> {
  let lab: LabDriver | undefined
  const wrap = options.app?.wrapDriver
  const server = await startServer({
    ...options,
    app: {
      ...options.app,
      wrapDriver: (driver) => {
        if (driver instanceof LabDriver) lab = driver
        return wrap?.(driver) ?? driver
      },
    },
  })
  const found = lab ?? server.poolLab
  if (found !== undefined) return { server, lab: found }
  await server.close()
  throw new Error('the test server runs no lab')
}
