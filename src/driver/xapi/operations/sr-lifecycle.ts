import { incorrectState, invalidParameters, noSuchObject } from '../../../errors.js'
import { optionalInteger, optionalString, optionalStringMap, requiredString } from '../../lab/operations/params.js'
import type { XoRecord } from '../../types.js'
import { created, step, type Env, type Target, type XapiAction, type XapiCreator, type XapiFields } from './context.js'
import type { XapiDestroyer } from './destroy.js'

/**
 * An SR's life through XAPI, as the reference leads it (xo-server's
 * createSr, destroySr, forgetSr, connectPbd, disconnectPbd): SR.create
 * through a running host, its PBDs unplugged before SR.destroy or
 * SR.forget, PBD.plug and PBD.unplug. What the lab refuses is checked on the
 * index first and refused the same way: a halted host, a storage driver the
 * pool lacks or a setting it does not know, a disk a live VM uses.
 */

const links = (record: XoRecord | undefined, field: string): string[] => (Array.isArray(record?.[field]) ? record[field].map(String) : [])

/**
 * The local storage types of XAPI's drivers: an SR of another type is made
 * shared, as XO creates NFS, iSCSI or SMB SRs.
 */
const LOCAL_TYPES = new Set(['ext', 'lvm', 'file', 'udev', 'zfs', 'xfs', 'btrfs', 'largeblock'])

/** ISO libraries hold `iso` content; every other driver's SRs hold disks (`user`), as XO creates them. */
const contentTypeOf = (type: string): string => (type === 'iso' ? 'iso' : 'user')

function requireRunning(host: XoRecord): void {
  if (host['power_state'] !== 'Running') throw incorrectState({ actual: host['power_state'], expected: 'Running', object: host.id, property: 'power_state' })
}

/** A VM that is not halted holds its disks: their SR cannot go, nor be unplugged from its host (`hostId`, when given). */
function requireDisksFree(env: Env, srId: string, hostId?: string): void {
  for (const vdi of links(env.index.getObject(srId), 'VDIs')) {
    for (const vbd of links(env.index.getObject(vdi), '$VBDs')) {
      const vm = env.index.getObject(String(env.index.getObject(vbd)?.['VM']))
      if (vm?.type !== 'VM' || vm['power_state'] === 'Halted' || (hostId !== undefined && vm['$container'] !== hostId)) continue
      throw incorrectState({ actual: vm['power_state'], expected: 'Halted', object: vm.id, property: 'power_state' })
    }
  }
}

/** The pool's storage driver of `type`, and the settings it takes: the lab's check, against XAPI's SM records. */
async function requireDriver(pool: Target['pool'], type: string, deviceConfig: Readonly<Record<string, string>>, signal: AbortSignal): Promise<void> {
  const drivers = Object.values(await pool.call<Readonly<Record<string, XapiFields>>>('SM.get_all_records', [], { signal }))
  const sm = drivers.find((driver) => driver['type'] === type)
  if (sm === undefined) throw invalidParameters([{ path: 'body.SR_type', message: `must be one of ${drivers.map((driver) => String(driver['type'])).join(', ')}` }])
  const settings = typeof sm['configuration'] === 'object' && sm['configuration'] !== null ? Object.keys(sm['configuration']) : []
  for (const key of Object.keys(deviceConfig)) {
    if (!settings.includes(key)) throw invalidParameters([{ path: `body.device_config.${key}`, message: `is not a setting of ${type}: ${settings.join(', ')}` }])
  }
}

export const createSr: XapiCreator = async (env, params, context) => {
  const hostId = requiredString(params, 'hostId')
  const host = env.index.getObject(hostId)
  const location = host?.type === 'host' ? env.locator.locate(host) : undefined
  if (host === undefined || location === undefined) throw noSuchObject(hostId, 'host')
  requireRunning(host)
  const type = requiredString(params, 'SR_type')
  const deviceConfig = optionalStringMap(params, 'device_config') ?? {}
  await requireDriver(location.pool, type, deviceConfig, context.signal)
  const contentType = optionalString(params, 'content_type') ?? contentTypeOf(type)
  if (contentType !== contentTypeOf(type)) throw invalidParameters([{ path: 'body.content_type', message: `must be ${contentTypeOf(type)} for ${type}` }])
  const ref = await location.pool.callAsync<string>(
    'SR.create',
    [
      location.ref,
      deviceConfig,
      // 0: the size the device has.
      optionalInteger(params, 'size') ?? 0,
      requiredString(params, 'name_label'),
      optionalString(params, 'name_description') ?? '',
      type,
      contentType,
      !LOCAL_TYPES.has(type),
      optionalStringMap(params, 'sm_config') ?? {},
    ],
    step(context),
  )
  return created(env, location.pool, 'SR', ref)
}

/** Its PBDs unplugged first, as XAPI refuses to let an SR go while one is plugged (SR_HAS_PBD). */
async function leave(env: Env, { object, pool, ref }: Target, message: 'SR.destroy' | 'SR.forget', signal: AbortSignal, progress: (percent: number) => void): Promise<void> {
  requireDisksFree(env, object.id)
  for (const pbd of await pool.call<string[]>('SR.get_PBDs', [ref], { signal })) {
    if ((await pool.call<boolean>('PBD.get_currently_attached', [pbd], { signal })) === true) await pool.callAsync('PBD.unplug', [pbd], { signal })
  }
  progress(30)
  await pool.callAsync(message, [ref], { signal, progress: (percent) => progress(30 + (70 * percent) / 100) })
}

/** DELETE: the SR and its disks, as the lab destroys any SR no live VM uses. */
export const destroySr: XapiDestroyer = (target, context, env) => leave(env, target, 'SR.destroy', context.signal, context.progress)

const forget: XapiAction = async (env, target, _params, context) => {
  await leave(env, target, 'SR.forget', context.signal, context.progress)
  return undefined
}

export const srLifecycleActions: Readonly<Record<string, XapiAction>> = { forget }

const plugging =
  (attached: boolean): XapiAction =>
  async (env, { object, pool, ref }, _params, context) => {
    const pbd = env.index.getObject(object.id) ?? object
    if (pbd['attached'] === attached) throw incorrectState({ actual: pbd['attached'], expected: !attached, object: pbd.id, property: 'attached' })
    const host = env.index.getObject(String(pbd['host']))
    if (host !== undefined) requireRunning(host)
    if (!attached) requireDisksFree(env, String(pbd['SR']), String(pbd['host']))
    await pool.callAsync(attached ? 'PBD.plug' : 'PBD.unplug', [ref], step(context))
    return undefined
  }

export const pbdActions: Readonly<Record<string, XapiAction>> = { plug: plugging(true), unplug: plugging(false) }
