import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { AccessControl } from './acl/store.js'
import { aclRoutes, roleActions } from './api/acl.js'
import { actionRoutes, driverActions, type ActionBinding } from './api/actions.js'
import { creationRoutes } from './api/creations.js'
import { changeRoutes } from './api/changes.js'
import { collectionSources } from './api/collections.js'
import { ListingCache } from './api/listing-cache.js'
import { dashboardRoutes } from './api/dashboard.js'
import { PoolMembersIndex } from './api/pool-members.js'
import { HeavyReads } from './http/heavy-reads.js'
import { diskRoutes } from './api/disks.js'
import { vmStreamRoutes } from './api/vm-streams.js'
import { backupRoutes, backupSources } from './api/backups.js'
import { BackupService } from './backups/service.js'
import { WorkerPool } from '../workers/pool.js'
import { docsRoutes } from './api/docs.js'
import { consoleRoutes } from './console/routes.js'
import { xo6Routes } from './console/xo6.js'
import { CONSOLE_LIMITS, OpenConsoles } from './consoles/open-consoles.js'
import { labConsoles } from './consoles/sources.js'
import { ConsoleUpgrades } from './consoles/upgrade.js'
import { operationsRoutes } from './api/operations-endpoints.js'
import { buildOpenApi } from './api/openapi.js'
import { createLiveChanges } from './api/live-changes.js'
import { readRoutes } from './api/read.js'
import { statsRoutes } from './api/stats.js'
import { lookups, subCollectionRoutes } from './api/sub-collections.js'
import { backupAliasRoutes } from './api/backup-aliases.js'
import { hostExtraRoutes } from './api/host-extras.js'
import { serviceRoutes } from './api/service-routes.js'
import { siteDashboardRoutes } from './api/site-dashboard.js'
import { vmDashboardRoutes } from './api/vm-dashboard.js'
import { backupReads } from './api/backup-insights.js'
import { LabHostFacts } from './driver/lab/host-facts.js'
import { UsageStats } from './stats/reader.js'
import type { CollectionSource } from './api/sources.js'
import { taskActions, taskRoutes } from './api/tasks.js'
import { meRoutes, tokenRoutes } from './api/tokens.js'
import { groupRoutes, userRoutes } from './api/users.js'
import { Authenticator } from './auth/authenticate.js'
import { TokenStore } from './auth/tokens.js'
import { Directory } from './auth/users.js'
import type { Config } from './config/config.js'
import { LabDriver } from './driver/lab/driver.js'
import { xapiConsoles } from './driver/xapi/console.js'
import { XapiDriver, type XapiDriverOptions } from './driver/xapi/driver.js'
import type { LabSpec } from './driver/lab/spec.js'
import { checkCapabilities } from './driver/capabilities.js'
import type { Driver } from './driver/types.js'
import { actionsByType, creationsByType, deletableTypes, patchByType, taggableTypes } from './model/operations.js'
import { EventBus } from './events/bus.js'
import { Versions } from './events/versions.js'
import { JsonCache } from './http/json-cache.js'
import { Metrics } from './http/metrics.js'
import type { RouteDef } from './http/route.js'
import { Router } from './http/router.js'
import { createHttpServer } from './http/server.js'
import { StreamPacer } from './http/stream-pacer.js'
import { answerAsRequest } from './http/upgrade-fallback.js'
import { loadInstallationId } from './installation.js'
import { openDatabase, type Db } from './store/database.js'
import { TaskManager } from './tasks/manager.js'
import { createServiceLog, loggerServiceLog, type ServiceLog } from './log.js'
import type { PoolConnector } from './driver/xapi/types.js'
import { proxySource } from './api/proxies.js'
import { serverRoutes } from './api/servers.js'
import { loadServersKey, SecretBox } from './servers/crypto.js'
import { labPoolConnector } from './servers/lab-connector.js'
import { ServerSchema } from './servers/record.js'
import { timerScheduler, type Scheduler } from './servers/reconnect.js'
import { ServerRegistry } from './servers/registry.js'
import { ServerStore } from './servers/store.js'

export interface AppOptions {
  readonly dataDir: string
  readonly config: Config
  readonly clock?: () => number
  readonly logger?: Logger
  /** where the generated administrator password is shown once (stderr by default) */
  readonly announce?: (line: string) => void
  readonly adminEmail?: string
  readonly adminPassword?: string
  /** lab content to seed instead of the demo fixture */
  readonly labSpec?: LabSpec
  /** routes added beside Keel's own (extensions, and tests of the HTTP layer) */
  readonly extraRoutes?: readonly RouteDef[]
  /** wraps the embedded lab driver (drivers under test, instrumentation) */
  readonly wrapDriver?: (lab: Driver) => Driver
  /** connects the pools of `servers` entries (default: the lab's, which refuses and says why) */
  readonly poolConnector?: PoolConnector
  /** runs the reconnection retries of `servers` entries (default: timers) */
  readonly reconnectScheduler?: Scheduler
  /** with `[driver] kind = "xapi"`: options of the XAPI driver (pools connected at start, in tests) */
  readonly xapi?: XapiDriverOptions
}

export interface App {
  readonly server: Server
  readonly db: Db
  readonly directory: Directory
  readonly tokens: TokenStore
  readonly driver: Driver
  /** the XAPI driver under `driver` when `[driver] kind = "xapi"`: what the servers collection connects pools to */
  readonly xapi: XapiDriver | undefined
  readonly bus: EventBus
  readonly tasks: TaskManager
  readonly servers: ServerRegistry
  /** this installation's id (src/installation.ts) */
  readonly installationId: string
  readonly log: Logger
  /** Writes out the log lines buffered so far; resolves once written (a fatal exit; a clean close does it itself). */
  flushLog(): Promise<void>
  listen(port: number, host: string): Promise<string>
  close(): Promise<void>
}

const JSON_CACHE_BYTES = 256 * 1024 * 1024
const LISTING_CACHE_BYTES = 64 * 1024 * 1024
const LISTING_CACHE_ENTRY_BYTES = 8 * 1024 * 1024

/** The key that derives secrets of client-bound tokens; kept apart from the database file. */
function loadClientKey(dataDir: string): Buffer {
  const file = join(dataDir, 'client-token.key')
  if (!existsSync(file)) writeFileSync(file, randomBytes(32), { mode: 0o600, flag: 'wx' })
  return readFileSync(file)
}

/** On an empty directory, creates the first administrator; returns an administrator's id. */
export async function ensureAdministrator(
  directory: Directory,
  options: Pick<AppOptions, 'adminEmail' | 'adminPassword' | 'announce'>,
  log: Logger,
): Promise<string> {
  const existing = [...directory.users()].find((user) => user.permission === 'admin')
  if (existing !== undefined) return existing.id
  const email = options.adminEmail ?? 'admin@admin.net'
  let password = options.adminPassword
  if (password === undefined || password === '') {
    password = randomBytes(18).toString('base64url')
    const announce = options.announce ?? ((line: string) => process.stderr.write(line + '\n'))
    announce(`keel: created administrator ${email} with password ${password} (shown once; change it with PATCH /rest/v0/users/<id>)`)
  }
  const id = await directory.createUser({ email, password, permission: 'admin' })
  log.info({ email }, 'created the first administrator')
  return id
}

export async function createApp(options: AppOptions): Promise<App> {
  const clock = options.clock ?? Date.now
  const serviceLog: ServiceLog = options.logger === undefined ? createServiceLog(options.config.log.level, options.config.log.maxBufferedBytes) : loggerServiceLog(options.logger)
  const { log } = serviceLog
  const db = openDatabase(options.dataDir)
  const installationId = loadInstallationId(options.dataDir)
  const bus = new EventBus((error) => log.error({ err: error }, 'event listener failed'))
  const tokens = new TokenStore(db, loadClientKey(options.dataDir), clock)
  const directory = new Directory(db, bus, clock, (userId) => tokens.forgetUser(userId))
  const acl = new AccessControl(db, bus, directory, clock)
  const adminId = await ensureAdministrator(directory, options, log)
  tokens.pruneExpired()
  const { kind, disconnectGrace, record, recordMaxBytes, transferResponseTimeout, transferIdleTimeout } = options.config.driver
  const xapi =
    kind === 'xapi'
      ? new XapiDriver({
          graceDelay: disconnectGrace,
          transferTimeouts: { response: transferResponseTimeout, idle: transferIdleTimeout },
          log: log.child({ component: 'xapi' }),
          ...(record === undefined ? {} : { record: { dir: record, maxBytes: recordMaxBytes } }),
          ...options.xapi,
        })
      : undefined
  const source = xapi ?? new LabDriver(db, {
    creatorId: adminId,
    clock,
    stepDelay: options.config.lab.stepDelay,
    dataDir: options.dataDir,
    ...(options.labSpec === undefined ? {} : { spec: options.labSpec }),
  })
  const driver: Driver = options.wrapDriver?.(source) ?? source
  checkCapabilities(driver.capabilities, {
    actionsByType,
    patchTypes: Object.keys(patchByType),
    deletableTypes,
    taggableTypes,
    creatableTypes: Object.keys(creationsByType),
  })
  await driver.open()
  const unsubscribeDriver = driver.subscribe((change) => bus.publish(change))
  const poolMembers = new PoolMembersIndex(driver)

  const cache = new JsonCache(JSON_CACHE_BYTES)
  const stopSuperseding = cache.follow(bus)
  const versions = new Versions(bus)
  const listings = new ListingCache(LISTING_CACHE_BYTES, LISTING_CACHE_ENTRY_BYTES)
  const heavyReads = new HeavyReads(options.config.http.maxHeavyListings, options.config.http.maxQueuedHeavyListings)
  const router = new Router()
  const tasks = new TaskManager(db, bus, {
    clock,
    installationId,
    keep: options.config.tasks.keep,
    onUnexpectedError: (error, task) => log.error({ err: error, taskId: task.id }, 'task failed unexpectedly'),
  })
  // Per-byte stream work (compression) runs here, off the event loop that answers the API.
  const workers = new WorkerPool({ size: 2, windowBytes: 4 * 1024 * 1024 })
  const pacer = new StreamPacer(options.config.http.streamPause)
  // Backup repositories live under these folders only; the default one is Keel's, made here.
  const configuredRoots = options.config.backups.repositoryRoots
  const defaultRoot = join(options.dataDir, 'backups')
  if (configuredRoots === undefined) mkdirSync(defaultRoot, { recursive: true, mode: 0o700 })
  const repositoryRoots = configuredRoots ?? [defaultRoot]
  const backups =
    driver.disks === undefined
      ? undefined
      : new BackupService({
          db,
          bus,
          driver,
          disks: driver.disks,
          tasks,
          workers,
          clock,
          repositoryRoots,
          installationId,
          warn: (error, message, fields) => log.warn({ err: error, ...fields }, message),
        })
  const servers = new ServerRegistry({
    store: new ServerStore(db, new SecretBox(() => loadServersKey(options.dataDir)), clock),
    connector: options.poolConnector ?? xapi ?? labPoolConnector,
    bus,
    scheduler: options.reconnectScheduler ?? timerScheduler,
    backoff: { initial: options.config.servers.reconnectDelay, max: options.config.servers.maxReconnectDelay },
    random: Math.random,
    log: { info: (fields, message) => log.info(fields, message), warn: (fields, message) => log.warn(fields, message) },
  })
  const serverSource: CollectionSource = { name: 'servers', type: 'server', resource: 'server', schema: ServerSchema, list: () => servers.list(), get: (id) => servers.get(id) }
  const sources = [
    ...collectionSources({ driver, directory, acl, tasks }),
    ...(backups === undefined ? [] : backupSources(backups)),
    serverSource,
    proxySource(options.config.proxies),
  ]
  const sourceNamed = (name: string): CollectionSource => {
    const source = sources.find((candidate) => candidate.name === name)
    if (source === undefined) throw new Error(`no collection ${name}`)
    return source
  }
  const bindingsOf = (source: CollectionSource): ActionBinding[] => {
    if (source.type === 'task') return taskActions(tasks)
    if (source.type === 'acl-role') return roleActions(acl)
    return driverActions(source, driver)
  }
  const collectionOf = (type: string): string | undefined => sources.find((source) => source.type === type)?.name
  const resourceOf = (type: string): string | undefined => sources.find((source) => source.type === type)?.resource
  const actionDeps = { tasks, driver, collectionOf, resourceOf }
  const authenticator = new Authenticator(directory, tokens, { failureDelay: options.config.authentication.failedLoginDelay })
  const metrics = new Metrics(serviceLog.droppedLines)
  metrics.gaugeHeavyReads(heavyReads)
  const live = createLiveChanges({
    bus,
    sources,
    cache,
    restApi: options.config.restApi,
    clock,
    log,
    authenticator,
    scopeOf: (userId) => acl.scopeOf(userId),
    accessVersion: () => acl.version,
    metrics,
  })
  const hostFacts = driver.hostFacts ?? new LabHostFacts(driver)
  const withBackups = backups === undefined ? {} : { backups: backupReads(backups) }
  let openApiText = ''
  const routes: RouteDef[] = [
    ...docsRoutes(() => openApiText),
    ...consoleRoutes({ authenticator, tokens, validity: options.config.authentication.defaultTokenValidity }),
    ...(options.config.http.xo6Root === undefined ? [] : xo6Routes({ authenticator, root: options.config.http.xo6Root })),
    ...meRoutes(),
    ...sources
      .filter((source) => source.name !== 'backup-archives')
      .flatMap((source) => readRoutes(source, { cache, listings, versions, watch: live.watch, single: source.type !== 'task', heavy: heavyReads })),
    ...taskRoutes(sourceNamed('tasks'), tasks, cache),
    ...sources.flatMap((source) => actionRoutes(source, bindingsOf(source), actionDeps)),
    ...sources.flatMap((source) => changeRoutes(source, driver)),
    ...sources.flatMap((source) => creationRoutes(source, driver, actionDeps)),
    ...userRoutes(directory, sourceNamed('users')),
    ...groupRoutes(directory, sourceNamed('groups')),
    ...aclRoutes({
      acl,
      directory,
      cache,
      sources: { roles: sourceNamed('acl-roles'), privileges: sourceNamed('acl-privileges'), users: sourceNamed('users'), groups: sourceNamed('groups') },
      sourceOfResource: (resource) => sources.find((source) => source.resource === resource),
    }),
    ...tokenRoutes(tokens, options.config.authentication),
    ...serverRoutes({ registry: servers, servers: serverSource, tasks }),
    ...dashboardRoutes({ driver, members: poolMembers, clock }),
    ...subCollectionRoutes({ sourceNamed: (name) => sources.find((source) => source.name === name), look: lookups(driver, tasks), cache }),
    ...serviceRoutes({ clock }),
    ...siteDashboardRoutes({ driver, facts: hostFacts, clock, versions, ...withBackups }),
    ...vmDashboardRoutes({ driver, vms: sourceNamed('vms'), ...withBackups }),
    ...hostExtraRoutes({ facts: hostFacts, driver, hosts: sourceNamed('hosts'), pools: sourceNamed('pools'), clock }),
    ...statsRoutes({
      reader: driver.stats ?? new UsageStats(driver, db, clock),
      driver,
      vms: sourceNamed('vms'),
      hosts: sourceNamed('hosts'),
      pools: sourceNamed('pools'),
    }),
    ...operationsRoutes({ db, driver, metrics, authenticator, metricsToken: options.config.metrics.token }),
    ...live.routes,
    ...(driver.disks === undefined
      ? []
      : [
          ...diskRoutes({ disks: driver.disks, index: driver, vdis: sourceNamed('vdis'), snapshots: sourceNamed('vdi-snapshots'), srs: sourceNamed('srs'), tasks, clock, pacer }),
          ...vmStreamRoutes({
            driver,
            disks: driver.disks,
            exportable: [sourceNamed('vms'), sourceNamed('vm-snapshots'), sourceNamed('vm-templates')],
            pools: sourceNamed('pools'),
            srs: sourceNamed('srs'),
            vms: sourceNamed('vms'),
            tasks,
            workers,
            pacer,
          }),
          ...(backups === undefined ? [] : backupRoutes({ backups, sources: new Map(sources.map((source) => [source.name, source])), driver, tasks, cache })),
          ...(backups === undefined
            ? []
            : backupAliasRoutes({ jobs: sourceNamed('backup-jobs'), logs: sourceNamed('backup-logs'), restoreLogs: sourceNamed('restore-logs'), cache })),
        ]),
    ...(options.extraRoutes ?? []),
  ]
  for (const route of routes) router.add(route)
  openApiText = JSON.stringify(
    buildOpenApi(routes, {
      title: 'Keel REST API',
      version: '0',
      description: 'Wire-compatible with the Xen Orchestra REST API v0. Authenticate with Basic (email and password) or the `authenticationToken` cookie.',
    }),
  )

  await backups?.open()

  const server = createHttpServer({
    router,
    authenticator,
    log,
    maxJsonBodySize: options.config.http.maxJsonBodySize,
    idleTimeout: options.config.http.idleTimeout,
    pacer,
    scopeOf: (userId) => acl.scopeOf(userId),
    metrics,
    requestLog: serviceLog.request,
  })

  const getObject = (id: string): ReturnType<Driver['getObject']> => driver.getObject(id)
  const scopeOf = (userId: string): ReturnType<AccessControl['scopeOf']> => acl.scopeOf(userId)
  const consoles = new ConsoleUpgrades({
    authenticator,
    scopeOf,
    getObject,
    consoles: new OpenConsoles({
      limits: CONSOLE_LIMITS,
      bus,
      getObject,
      scopeOf,
      onCredentialsChange: (listener) => authenticator.onCredentialsChange(listener),
      credentialCheckInterval: options.config.restApi.streamCredentialCheckInterval,
      clock,
      log,
    }),
    source: xapi === undefined ? labConsoles : xapiConsoles(xapi, log),
    log,
    requestLog: serviceLog.request,
    observe: (route, method, status, seconds) => metrics.observeRequest(route, method, status, seconds),
    openStreams: metrics.openStreams,
    otherwise: (req, socket) => answerAsRequest(server, req, socket),
  })
  server.on('upgrade', (req, socket, head) => consoles.handle(req, socket, head))

  servers.start()

  let closed = false
  return {
    server,
    db,
    directory,
    tokens,
    driver,
    xapi,
    bus,
    tasks,
    servers,
    installationId,
    log,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, host, () => {
          server.off('error', reject)
          const address = server.address() as AddressInfo
          const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
          resolve(`http://${shownHost}:${address.port}`)
        })
      }),
    close: async () => {
      if (closed) return
      closed = true
      // Open streams never finish on their own: end them so that the server can close.
      live.close()
      consoles.close()
      // Stop accepting, let in-flight requests finish, then cut what is still open.
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeIdleConnections()
      const grace = setTimeout(() => server.closeAllConnections(), 5000)
      grace.unref()
      if (server.listening) await stopped
      clearTimeout(grace)
      backups?.close()
      tasks.close()
      acl.close()
      metrics.close()
      versions.close()
      stopSuperseding()
      await servers.close()
      unsubscribeDriver()
      poolMembers.close()
      await workers.close()
      await driver.close()
      db.close()
      log.info('stopped')
      // However long stderr's reader takes: a clean stop loses no line.
      await serviceLog.flush()
    },
    flushLog: () => serviceLog.flush(),
  }
}
