import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { WorkerPool } from '../../workers/pool.js'
import { LabDriver } from '../driver/lab/driver.js'
import type { LabSpec } from '../driver/lab/spec.js'
import { openDatabase, type Db } from '../store/database.js'
import { NULL_REF } from '../xapi/datamodel/index.js'
import { actionHandlers, SIMULATOR_USER } from './actions.js'
import { Dispatcher, type Explicit } from './calls.js'
import { SimulatedConsoles } from './consoles.js'
import { deviceHandlers } from './devices.js'
import type { Services } from './context.js'
import { XapiDatabase } from './database.js'
import { eventHandlers } from './events.js'
import { serverCertificate } from './certificate.js'
import { Faults } from './faults.js'
import { instantiationHandlers } from './instantiate.js'
import { maintenanceHandlers } from './maintenance.js'
import { networkHandlers } from './networks.js'
import { DEFAULT_MAX_BODY, rpcListener } from './http.js'
import { LabFeed } from './lab-feed.js'
import { memberAddresses, memberOf, PoolRoles } from './members.js'
import { joinHandlers, joinTarget, offerJoin, type JoinSide } from './pool-join.js'
import { sessionHandlers } from './session-handlers.js'
import { setterHandlers } from './setters.js'
import { storageHandlers } from './storage.js'
import { Sessions } from './sessions.js'
import { Tasks } from './tasks.js'
import { Transfers } from './transfers.js'
import { dataSourceHandlers, RrdUpdates } from './rrd.js'
import { UsageStats } from '../stats/reader.js'


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
  /** the lab an empty data directory is seeded with, instead of the demo lab */
  readonly spec?: LabSpec
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
    ...(options.spec === undefined ? {} : { spec: options.spec }),
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
  // The RRDs are the lab's own series, the data sources a client records kept in the lab's store.
  const stats = new UsageStats(driver, store, options.clock ?? Date.now)
  const shutdown = new AbortController()
  const scheme = options.tls === undefined ? 'http' : 'https'
  const roles = new PoolRoles(db, feed, masterRef)
  // Set once the simulator listens: a host joining then answers on an address of its own.
  let addMember = async (_ref: string): Promise<void> => undefined
  const side: JoinSide = { services, dataDir: options.dataDir, scheme, addMember: (ref) => addMember(ref), joined: (address) => roles.joined(address) }
  const plain = (handlers: Readonly<Record<string, Explicit['handler']>>): Record<string, Explicit> =>
    Object.fromEntries(Object.entries(handlers).map(([method, handler]) => [method, { handler }]))
  const dispatcher = new Dispatcher(
    services,
    { ...plain(sessionHandlers), ...plain(eventHandlers), ...plain(tasks.handlers), ...plain(dataSourceHandlers(stats)), ...actionHandlers, ...deviceHandlers, ...setterHandlers, ...instantiationHandlers, ...maintenanceHandlers, ...networkHandlers, ...storageHandlers, ...joinHandlers(side) },
    (method, session, run) => tasks.runAsync(method, session, run),
    shutdown.signal,
  )
  const faults = new Faults(services, roles)
  // Compression and checksums of XVA transfers run off the event loop, as Keel's own do.
  const workers = new WorkerPool({ size: 2, windowBytes: 4 * 1024 * 1024 })
  const transfers = new Transfers(services, tasks, faults, workers, (hostRef) => roles.addressOf(hostRef))
  const maxBody = options.maxBodySize ?? DEFAULT_MAX_BODY
  const rrd = new RrdUpdates(services, stats)
  const consoles = new SimulatedConsoles(services)
  const handleTransfer =
    (hostRef: string) =>
    (request: IncomingMessage, response: ServerResponse): boolean =>
      faults.handle(request, response) || rrd.handle(request, response, hostRef) || transfers.handle(request, response, hostRef)
  const delayed = {
    call: async (method: string, params: readonly unknown[]) => {
      const outcome = await dispatcher.call(method, params)
      await faults.delay()
      return outcome
    },
  }
  const servers: Server[] = []
  let withdraw = (): void => undefined
  const serve = async (listener: RequestListener, connect: (request: IncomingMessage, socket: Duplex, head: Buffer) => void, port: number, host: string, names: readonly string[]): Promise<number> => {
    const server = options.tls === undefined ? createServer(listener) : createHttpsServer(await serverCertificate(options.dataDir, [...options.tls.names, ...names]), listener)
    server.on('connect', connect)
    servers.push(server)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => resolve())
    })
    return (server.address() as AddressInfo).port
  }
  return {
    services,
    dispatcher,
    listen: async (port, host) => {
      const members = memberAddresses(host, db)
      roles.addresses = members
      const listener = (ref: string): RequestListener =>
        roles.listener(ref, rpcListener(delayed, maxBody, handleTransfer(ref)), rpcListener(memberOf(() => roles.masterAddress()), maxBody, handleTransfer(ref)))
      const connect = (ref: string) => (request: IncomingMessage, socket: Duplex, head: Buffer) =>
        roles.isStopped(ref) ? socket.destroy() : consoles.connect(ref, request, socket, head)
      roles.onStop((ref) => consoles.hostStopped(ref))
      const first = masterRef()
      const bound = await serve(listener(first), connect(first), port, host, [...members.values()])
      // Each host answers on its own loopback address; the members send clients to the master.
      for (const [ref, address] of members) {
        feed.overlay(ref, { address })
        if (ref !== first) await serve(listener(ref), connect(ref), bound, address, [])
      }
      consoles.start({ scheme, port: bound, host, addressOf: (ref) => members.get(ref) })
      addMember = async (ref) => {
        const address = roles.nextAddress()
        if (address === undefined) return
        await serve(listener(ref), connect(ref), bound, address, [])
        roles.addMember(ref, address)
        feed.overlay(ref, { address })
      }
      const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${bound}`
      withdraw = offerJoin(new URL(url).origin, joinTarget(side))
      return url
    },
    close: async () => {
      withdraw()
      shutdown.abort()
      consoles.stop()
      for (const server of servers) server.closeAllConnections()
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))))
      feed.stop()
      await workers.close()
      await driver.close()
      store.close()
    },
  }
}
