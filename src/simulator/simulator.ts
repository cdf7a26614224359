import { createServer, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { LabDriver } from '../driver/lab/driver.js'
import { openDatabase, type Db } from '../store/database.js'
import { NULL_REF } from '../xapi/datamodel/index.js'
import { actionHandlers, SIMULATOR_USER } from './actions.js'
import { Dispatcher, type Explicit } from './calls.js'
import type { Services } from './context.js'
import { XapiDatabase } from './database.js'
import { eventHandlers } from './events.js'
import { serverCertificate } from './certificate.js'
import { DEFAULT_MAX_BODY, rpcListener } from './http.js'
import { LabFeed } from './lab-feed.js'
import { sessionHandlers } from './session-handlers.js'
import { Sessions } from './sessions.js'
import { Tasks } from './tasks.js'
import { Transfers } from './transfers.js'


export interface SimulatorOptions {
  readonly dataDir: string
  readonly password: string
  /** ms a simulated step of a lab operation takes */
  readonly stepDelay?: number
  readonly maxBodySize?: number
  readonly eventLogSize?: number
  readonly clock?: () => number
  /** HTTPS with the data directory's self-signed certificate (made on first use), valid for these names */
  readonly tls?: { readonly names: readonly string[] }
}

export interface Simulator {
  readonly services: Services
  readonly dispatcher: Dispatcher
  listen(port: number, host: string): Promise<string>
  close(): Promise<void>
}

/** The lab of a data directory, served as a XAPI pool. */
export async function openSimulator(options: SimulatorOptions): Promise<Simulator> {
  const store: Db = openDatabase(options.dataDir)
  const driver = new LabDriver(store, {
    creatorId: SIMULATOR_USER,
    dataDir: options.dataDir,
    ...(options.stepDelay === undefined ? {} : { stepDelay: options.stepDelay }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  })
  await driver.open()
  const db = new XapiDatabase({ ...(options.eventLogSize === undefined ? {} : { eventLogSize: options.eventLogSize }), ...(options.clock === undefined ? {} : { clock: options.clock }) })
  const feed = new LabFeed(driver, db)
  feed.start()
  const masterRef = (): string => {
    for (const pool of db.ofClass('pool')) return String(pool.record['master'])
    return NULL_REF
  }
  const sessions = new Sessions(db, { password: options.password, hostRef: masterRef, ...(options.clock === undefined ? {} : { clock: options.clock }) })
  const services: Services = { db, feed, driver, sessions, masterRef }
  const tasks = new Tasks(services, options.clock)
  const shutdown = new AbortController()
  const plain = (handlers: Readonly<Record<string, Explicit['handler']>>): Record<string, Explicit> =>
    Object.fromEntries(Object.entries(handlers).map(([method, handler]) => [method, { handler }]))
  const dispatcher = new Dispatcher(
    services,
    { ...plain(sessionHandlers), ...plain(eventHandlers), ...plain(tasks.handlers), ...actionHandlers },
    (method, session, run) => tasks.runAsync(method, session, run),
    shutdown.signal,
  )
  const transfers = new Transfers(services, tasks)
  const listener = rpcListener(dispatcher, options.maxBodySize ?? DEFAULT_MAX_BODY, (request, response) => transfers.handle(request, response))
  const server: Server = options.tls === undefined ? createServer(listener) : createHttpsServer(await serverCertificate(options.dataDir, options.tls.names), listener)
  const scheme = options.tls === undefined ? 'http' : 'https'
  return {
    services,
    dispatcher,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, host, () => {
          const address = server.address() as AddressInfo
          resolve(`${scheme}://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`)
        })
      }),
    close: async () => {
      shutdown.abort()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      feed.stop()
      await driver.close()
      store.close()
    },
  }
}
