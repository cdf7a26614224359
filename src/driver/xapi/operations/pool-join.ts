import { incorrectState, invalidParameters, KeelError, noSuchObject } from '../../../errors.js'
import { optionalBoolean, requiredString } from '../../lab/operations/params.js'
import type { XoRecord } from '../../types.js'
import type { XapiPool } from '../types.js'
import type { Env, Target, XapiAction } from './context.js'

function requireRunning(host: XoRecord | undefined, id: string): XoRecord {
  if (host?.type !== 'host') throw noSuchObject(id, 'host')
  if (host['power_state'] !== 'Running') throw incorrectState({ actual: host['power_state'], expected: 'Running', object: host.id, property: 'power_state' })
  return host
}

/** The lab's checks (lab/operations/pool-join.ts), read from the joiner's pool over XAPI. */
async function checkJoin(env: Env, target: Target, joiner: XapiPool, host: XoRecord, force: boolean): Promise<void> {
  const from = String(host['$pool'])
  const master = requireRunning(env.index.getObject(String(target.object['master'])), String(target.object['master']))
  const hosts = await joiner.call<string[]>('host.get_all', [])
  if (hosts.length !== 1) throw incorrectState({ actual: hosts.length, expected: 1, object: from, property: 'hosts' })
  const brandAndVersion = (record: XoRecord): string => `${String(record['productBrand'])} ${String(record['version'])}`
  if (!force && brandAndVersion(host) !== brandAndVersion(master)) {
    throw incorrectState({ actual: brandAndVersion(host), expected: brandAndVersion(master), object: host.id, property: 'version' })
  }
  for (const ref of await joiner.call<string[]>('VM.get_all', [])) {
    const record = env.locator.recordOf(joiner, ref)
    const held = record?.type === 'VM' || record?.type === 'VM-snapshot' || (record?.type === 'VM-template' && record['isDefaultTemplate'] !== true)
    if (held) throw incorrectState({ actual: from, expected: target.object.id, object: record.id, property: '$pool' })
  }
  for (const ref of await joiner.call<string[]>('SR.get_all', [])) {
    const record = env.locator.recordOf(joiner, ref)
    if (record?.['shared'] === true) throw incorrectState({ actual: true, expected: false, object: record.id, property: 'shared' })
  }
}

/**
 * add_host as the reference merges a pool into another (xo-server
 * `mergeXenPools`): `pool.join` (`pool.join_force` with `force`) on a
 * session of the joining host's own pool, given the target pool's address
 * and the credentials Keel connected it with. The joiner's pool connection
 * then ends, as the reference unregisters its server (driver.ts `merge`).
 *
 * Before asking XAPI, the host is checked as the lab checks it, so that
 * both drivers refuse alike: XAPI would accept a joiner holding halted VMs,
 * snapshots or templates of its own and drop them with its database, and
 * Keel loses nothing.
 */
export const addHost: XapiAction = async (env, target, params) => {
  const hostId = requiredString(params, 'host')
  const force = optionalBoolean(params, 'force') ?? false
  const { merger } = env
  if (merger === undefined) throw new KeelError('NOT_IMPLEMENTED', 'add_host needs the driver\u2019s pool connections')
  const host = env.index.getObject(hostId)
  if (host?.type !== 'host') throw noSuchObject(hostId, 'host')
  if (host['$pool'] === target.object.id) throw invalidParameters([{ path: 'body.host', message: `host ${hostId} is already in pool ${target.object.id}` }])
  requireRunning(host, hostId)
  const joiner = env.locator.locate(host)
  const credentials = merger.joinCredentials(target.pool.poolId)
  if (joiner === undefined || credentials === undefined) throw noSuchObject(joiner === undefined ? hostId : target.object.id, joiner === undefined ? 'host' : 'pool')
  await checkJoin(env, target, joiner.pool, host, force)
  await merger.merge(joiner.pool.poolId, target.pool.poolId, hostId, async (pool) => {
    await pool.call(force ? 'pool.join_force' : 'pool.join', [credentials.address, credentials.username, credentials.password])
  })
  return undefined
}
