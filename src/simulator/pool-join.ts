import { cp, rm, stat } from 'node:fs/promises'
import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import { join } from 'node:path'
import type { LabDriver } from '../driver/lab/driver.js'
import { Plan } from '../driver/lab/operations/plan.js'
import { planJoin } from '../driver/lab/operations/pool-join.js'
import type { LabChange, LabStore } from '../driver/lab/store.js'
import { isTransportError, jsonRpc, type RpcTarget } from '../driver/xapi/transport.js'
import { XapiError } from '../driver/xapi/types.js'
import type { XoRecord } from '../driver/types.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import { failure, text, withAsync } from './actions.js'
import type { Explicit } from './calls.js'
import type { CallContext, Services } from './context.js'
import { operationNotAllowed, XapiFailure } from './failures.js'
import { MAPPED_TYPES } from './records/index.js'

/**
 * XAPI's pool.join between two simulators of one process (xen-api
 * ocaml/xapi/xapi_pool.ml `join_common`): the joining host logs in to the
 * master it is given over XAPI, checks itself against it as `pre_join_checks`
 * does, then hands its host, PIFs, local SRs (their disk files copied over),
 * control domain and messages to the master's lab, where the lab's own join
 * rehomes them. Its own pool goes, and from then on it answers
 * HOST_IS_SLAVE with the master's address, as a restarted slave toolstack.
 */

/** A pool that hosts of other simulators may join. */
export interface JoinTarget {
  /** takes in the joining host and what comes with it; committed in the lab when this resolves */
  adopt(joiner: Joiner): Promise<void>
}

export interface Joiner {
  readonly lab: LabDriver
  readonly dataDir: string
  readonly hostId: string
}

/** What one simulator gives the join, as joiner or as master. */
export interface JoinSide {
  readonly services: Services
  readonly dataDir: string
  readonly scheme: 'http' | 'https'
  /** makes a host of another lab answer here (on an address of its own where members do), before its records arrive */
  addMember(hostRef: string): Promise<void>
  /** every host of this simulator answers HOST_IS_SLAVE with this address from now on */
  joined(masterAddress: string): void
}

/** The simulators of this process that serve as masters, by origin (`http://127.0.0.1:8443`). */
const targets = new Map<string, JoinTarget>()

/** Lets hosts join the pool served at `origin`; the returned function withdraws it. */
export function offerJoin(origin: string, target: JoinTarget): () => void {
  targets.set(origin, target)
  return () => {
    if (targets.get(origin) === target) targets.delete(origin)
  }
}

const diskFolder = (dataDir: string, sr: string): string => join(dataDir, 'srs', sr)

const exists = async (path: string): Promise<boolean> => (await stat(path).catch(() => undefined)) !== undefined

/** The master's address as XAPI takes it (a host name, `host:port` here since simulators share an address), as a URL of the joiner's scheme. */
function masterOrigin(address: string, scheme: 'http' | 'https'): URL {
  try {
    return new URL(new URL(/^[a-z]+:\/\//i.test(address) ? address : `${scheme}://${address}`).origin)
  } catch {
    throw new XapiFailure('JOINING_HOST_CONNECTION_FAILED')
  }
}

interface MasterFacts {
  readonly uuid: string
  readonly softwareVersion: Readonly<Record<string, unknown>>
}

/** Logs in to the master as the joining host does (its certificate unchecked, as XAPI's `unverified_rpc`), reads its host, logs out. */
async function askMaster(origin: URL, user: string, password: string): Promise<MasterFacts> {
  const agent = origin.protocol === 'https:' ? new HttpsAgent({ rejectUnauthorized: false }) : new HttpAgent()
  const target: RpcTarget = { origin, agent }
  const call = (method: string, params: readonly unknown[]): Promise<unknown> => jsonRpc(target, method, params, { timeout: 30_000 })
  try {
    const session = String(await call('session.login_with_password', [user, password, '1.0', 'xapi-simulator-join']))
    try {
      const pools = (await call('pool.get_all_records', [session])) as Record<string, Record<string, unknown>>
      const master = String(Object.values(pools)[0]?.['master'])
      const host = (await call('host.get_record', [session, master])) as Record<string, unknown>
      const version = host['software_version']
      return { uuid: String(host['uuid']), softwareVersion: typeof version === 'object' && version !== null ? (version as Record<string, unknown>) : {} }
    } finally {
      await call('session.logout', [session]).catch(() => undefined)
    }
  } catch (error) {
    if (error instanceof XapiError) throw new XapiFailure(error.code, ...error.params)
    if (isTransportError(error)) throw new XapiFailure('JOINING_HOST_CONNECTION_FAILED')
    throw error
  } finally {
    agent.destroy()
  }
}

/** XAPI's pre-join checks that the lab can answer, in `pre_join_checks`' order. */
function checkJoiner(context: CallContext, host: XoRecord, master: MasterFacts, force: boolean): void {
  const { driver, db } = context
  if (master.uuid === host['uuid']) throw operationNotAllowed('Host cannot become slave of itself')
  if ([...driver.objectsOfType('VM')].some((vm) => vm['power_state'] === 'Running')) throw new XapiFailure('JOINING_HOST_CANNOT_HAVE_RUNNING_VMS')
  const mine = db.get(String(host['_xapiRef']))?.record['software_version']
  const own = typeof mine === 'object' && mine !== null ? (mine as Record<string, unknown>) : {}
  if (own['product_brand'] !== master.softwareVersion['product_brand']) throw new XapiFailure('HOSTS_NOT_COMPATIBLE')
  if (!force && own['product_version'] !== master.softwareVersion['product_version']) throw new XapiFailure('HOSTS_NOT_HOMOGENEOUS', 'Software version differs')
  if ([...driver.objectsOfType('SR')].some((sr) => sr['shared'] === true)) throw new XapiFailure('JOINING_HOST_CANNOT_CONTAIN_SHARED_SRS')
  // XAPI drops the joining host's database, halted guests included; the simulator loses nothing instead.
  const held = [...driver.objectsOfType('VM'), ...driver.objectsOfType('VM-snapshot'), ...driver.objectsOfType('VM-template')].find((vm) => vm.type !== 'VM-template' || vm['isDefaultTemplate'] !== true)
  if (held !== undefined) throw operationNotAllowed(`the simulator does not drop the joining host's ${held.type} ${String(held['name_label'])}: destroy it first`)
}

async function joinPool(side: JoinSide, context: CallContext, [address, user, password]: readonly XmlRpcValue[], force: boolean): Promise<string> {
  const { driver } = context
  const hosts = [...driver.objectsOfType('host')]
  const [host] = hosts
  if (host === undefined) throw operationNotAllowed('this host is in no pool')
  if (hosts.length > 1) throw new XapiFailure('JOINING_HOST_CANNOT_BE_MASTER_OF_OTHER_HOSTS')
  const origin = masterOrigin(text(address), side.scheme)
  const master = await askMaster(origin, text(user), text(password))
  checkJoiner(context, host, master, force)
  const target = targets.get(origin.origin)
  if (target === undefined) throw new XapiFailure('JOINING_HOST_CONNECTION_FAILED')
  await target.adopt({ lab: driver, dataDir: side.dataDir, hostId: host.id })
  // The master has it all now: the joining host's own database goes, its disks with it (copied over by adopt).
  const srs = [...driver.objectsOfType('SR')].map((sr) => sr.id)
  driver.applyChanges(MAPPED_TYPES.flatMap((type) => [...driver.objectsOfType(type)].map((object): LabChange => ({ kind: 'remove', object }))))
  for (const sr of srs) await rm(diskFolder(side.dataDir, sr), { recursive: true, force: true })
  side.joined(text(address))
  // As the slave's toolstack restarts, its sessions end; the caller has had its answer.
  setImmediate(() => context.sessions.invalidateAll())
  return ''
}

/** The master's lab with the joining lab's records beside it, for the lab's join to run on both at once. */
function unionStore(master: LabDriver, joiner: LabDriver): LabStore {
  return {
    getObject: (id) => master.getObject(id) ?? joiner.getObject(id),
    objectsOfType: (type) => [...master.objectsOfType(type), ...joiner.objectsOfType(type)],
    applyChanges: () => {
      throw new Error('a join across two labs is committed on each lab')
    },
  }
}

/** The master's side: the joining host's records rehomed here by the lab's join, its local SRs' files copied beside them. */
export function joinTarget(side: JoinSide): JoinTarget {
  return {
    adopt: async ({ lab, dataDir, hostId }) => {
      const { driver, masterRef } = side.services
      const theirs = new Set(MAPPED_TYPES.flatMap((type) => [...lab.objectsOfType(type)].map((object) => object.id)))
      for (const id of theirs) if (driver.getObject(id) !== undefined) throw operationNotAllowed(`${id} is already in the pool`)
      const pool = [...driver.objectsOfType('pool')][0]
      const host = lab.getObject(hostId)
      if (pool === undefined || host === undefined) throw operationNotAllowed('no pool to join')
      const plan = new Plan(unionStore(driver, lab))
      try {
        planJoin(plan, pool.id, hostId, true)
      } catch (error) {
        throw failure(error, masterRef(), 'host')
      }
      // What the join rehomed comes here; what it dropped of the old pool stays behind with it.
      const changes: LabChange[] = []
      for (const change of plan.changes()) {
        if (!theirs.has(change.object.id)) changes.push(change)
        else if (change.kind !== 'remove') changes.push({ kind: 'add', object: change.object })
      }
      for (const { object } of changes) {
        if (object.type !== 'SR' || !theirs.has(object.id) || !(await exists(diskFolder(dataDir, object.id)))) continue
        await cp(diskFolder(dataDir, object.id), diskFolder(side.dataDir, object.id), { recursive: true, errorOnExist: true, force: false })
      }
      await side.addMember(String(host['_xapiRef']))
      driver.applyChanges(changes)
    },
  }
}

/** pool.join and pool.join_force, each also as Async.pool.*. */
export const joinHandlers = (side: JoinSide): Readonly<Record<string, Explicit>> =>
  withAsync({
    'pool.join': (context, args) => joinPool(side, context, args, false),
    'pool.join_force': (context, args) => joinPool(side, context, args, true),
  })
