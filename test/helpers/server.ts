import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { createApp, type App, type AppOptions } from '../../src/app.js'
import { loadConfig, type ConfigOverrides } from '../../src/config/config.js'

export const ADMIN_EMAIL = 'admin@admin.net'
export const ADMIN_PASSWORD = 'test-admin-password'

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
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'keel-test-'))
  const clock = options.clock ?? new ManualClock()
  const config = loadConfig(undefined, {
    ...options.config,
    authentication: { failedLoginDelay: 20, ...options.config?.authentication },
    lab: { stepDelay: 1, ...options.config?.lab },
  })
  const app = await createApp({
    dataDir,
    config,
    clock: clock.read,
    logger: pino({ level: 'silent' }),
    adminEmail: ADMIN_EMAIL,
    adminPassword: ADMIN_PASSWORD,
    ...options.app,
  })
  const url = await app.listen(0, '127.0.0.1')
  const adminAuth = basic(ADMIN_EMAIL, ADMIN_PASSWORD)
  const request: TestServer['request'] = (path, init = {}) => {
    const { auth, ...rest } = init
    const headers = new Headers(rest.headers)
    if (auth !== null && !headers.has('authorization') && !headers.has('cookie')) {
      headers.set('authorization', auth ?? adminAuth)
    }
    return fetch(url + path, { redirect: 'manual', ...rest, headers })
  }
  return {
    url,
    app,
    dataDir,
    clock,
    request,
    async json<T>(path: string, init?: RequestInit & { auth?: string | null }) {
      const response = await request(path, init)
      const text = await response.text()
      return { status: response.status, body: (text === '' ? undefined : JSON.parse(text)) as T, response }
    },
    async close(closeOptions = {}) {
      await app.close()
      if (closeOptions.keepData !== true && options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

export function jsonBody(value: unknown, method = 'POST'): RequestInit {
  return { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) }
}

/** Ids of the demo lab (fixtures/demo-lab.json, seed 1), pinned by test/driver. */
export const demo = {
  pool: '00ae6e8b-ddef-41b0-94b6-97124b2d6e63',
  master: '584d2b80-466d-47d0-b653-93212fcf0256',
  host2: '5b58252d-bd00-452e-ab71-c6cd65bfc8da',
  host3: '358ec160-c443-45cb-8089-977c0c9d116e',
  runningVm: '77a24872-31be-4503-b540-0908da76e3dd',
  snapshottedVm: '260d67ad-7c9c-472c-b94f-82feba43ed6d',
  haltedVm: '40def2d2-8f4a-44c1-879a-bae013aea30e',
  localHaltedVm: '8531f279-e192-4798-99ea-ba72576a7bc8',
  pausedVm: '5b263854-0699-4f20-93f2-6fce1a4f3472',
  suspendedVm: 'f95bc0a3-54e4-4a4d-899b-85e6752ae46b',
  defaultSr: 'd6b802dc-85d6-409e-a048-690abe38970d',
  template: '00ae6e8b-ddef-41b0-94b6-97124b2d6e63-ed5c6439-02ce-4122-a098-acad29cd6636',
} as const
