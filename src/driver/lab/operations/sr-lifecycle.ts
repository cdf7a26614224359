import { randomUUID } from 'node:crypto'
import { incorrectState, invalidParameters } from '../../../errors.js'
import type { PbdRecord, SrRecord } from '../../../model/records.js'
import { SR_DRIVERS } from '../catalog.js'
import type { SrDriver } from '../spec.js'
import { identity } from './builders.js'
import { diskIds } from './guest.js'
import { requireHostState } from './host.js'
import { addToList, removeFromList } from './lists.js'
import { optionalInteger, optionalString, optionalStringMap, requiredString, type ActionHandler, type Params } from './params.js'
import type { Plan } from './plan.js'
import { forgetMessages, removeDisk } from './removal.js'
import { preview, Run, type Operation } from './run.js'

/**
 * An SR's life in the lab: created through a host (a folder of the lab's data
 * directory named by its id holds its disks), connected to hosts by PBDs that
 * are plugged and unplugged, then forgotten (the records go, the folder and
 * its files stay, as XAPI's SR.forget leaves the storage untouched) or
 * destroyed (records and files go).
 */

/** What a new SR measures when the request gives no size: the lab has no device to ask. */
const DEFAULT_SIZE = 2 ** 40

const isDriver = (name: string): name is SrDriver => Object.hasOwn(SR_DRIVERS, name)

function newSr(plan: Plan, params: Params, id: string): string {
  const host = plan.get(requiredString(params, 'hostId'), 'host')
  requireHostState(host, 'Running')
  const type = requiredString(params, 'SR_type')
  if (!isDriver(type)) throw invalidParameters([{ path: 'body.SR_type', message: `must be one of ${Object.keys(SR_DRIVERS).join(', ')}` }])
  const driver = SR_DRIVERS[type]
  const deviceConfig = optionalStringMap(params, 'device_config') ?? {}
  for (const key of Object.keys(deviceConfig)) {
    if (!Object.hasOwn(driver.sm.configuration, key)) {
      throw invalidParameters([{ path: `body.device_config.${key}`, message: `is not a setting of ${type}: ${Object.keys(driver.sm.configuration).join(', ')}` }])
    }
  }
  const contentType = optionalString(params, 'content_type') ?? driver.contentType
  if (contentType !== driver.contentType) throw invalidParameters([{ path: 'body.content_type', message: `must be ${driver.contentType} for ${type}` }])
  const sr = plan.add<SrRecord>({
    type: 'SR',
    ...identity(host.$pool, id),
    name_label: requiredString(params, 'name_label'),
    name_description: optionalString(params, 'name_description') ?? '',
    tags: [],
    SR_type: type,
    content_type: contentType,
    shared: driver.shared,
    size: optionalInteger(params, 'size') ?? DEFAULT_SIZE,
    physical_usage: 0,
    usage: 0,
    ...(driver.allocation === undefined ? {} : { allocationStrategy: driver.allocation }),
    inMaintenanceMode: false,
    current_operations: {},
    other_config: {},
    sm_config: { ...optionalStringMap(params, 'sm_config') },
    VDIs: [],
    $PBDs: [],
    $container: driver.shared ? host.$pool : host.id,
  })
  const hosts = driver.shared ? plan.all('host').filter((other) => other.$pool === host.$pool) : [host]
  for (const on of hosts) {
    const pbd = plan.add<PbdRecord>({
      type: 'PBD',
      ...identity(host.$pool),
      attached: on.power_state === 'Running',
      host: on.id,
      SR: sr.id,
      device_config: { ...deviceConfig },
      otherConfig: {},
    })
    addToList(plan.edit(sr.id, 'SR').$PBDs, pbd.id)
    addToList(plan.edit(on.id, 'host').$PBDs, pbd.id)
  }
  return sr.id
}

/** The folder first, so that the SR never shows without it; taken back if the records cannot be made. */
export async function createSr(op: Operation, params: Params): Promise<{ id: string; type: string }> {
  const id = randomUUID()
  preview(op.env, (plan) => newSr(plan, params, id))
  const run = new Run(op, 2)
  await run.wait()
  await op.env.disks?.createSr(id)
  try {
    await run.apply((plan) => newSr(plan, params, id))
  } catch (error) {
    await op.env.disks?.destroySr(id)
    throw error
  }
  return { id, type: 'SR' }
}

const disksOn = (plan: Plan, srId: string) => [...plan.all('VDI'), ...plan.all('VDI-snapshot')].filter((disk) => disk.$SR === srId)

/** A VM that is not halted holds its disks: their SR cannot go, nor be unplugged from its host (`hostId`, when given). */
function requireDisksFree(plan: Plan, srId: string, hostId?: string): void {
  const onSr = new Set(disksOn(plan, srId).map((disk) => disk.id))
  for (const vm of plan.all('VM')) {
    if (vm.power_state === 'Halted' || (hostId !== undefined && vm.$container !== hostId)) continue
    const cds = vm.$VBDs.flatMap((id) => plan.get(id, 'VBD').VDI ?? [])
    if ([...diskIds(plan, vm), ...cds].some((id) => onSr.has(id))) {
      throw incorrectState({ actual: vm.power_state, expected: 'Halted', object: vm.id, property: 'power_state' })
    }
  }
}

/** The SR's records go: its disks (drives of halted VMs using them too), its PBDs, the pool's links to it. */
function removeSr(plan: Plan, srId: string): void {
  requireDisksFree(plan, srId)
  const sr = plan.get(srId, 'SR')
  for (const disk of disksOn(plan, srId)) removeDisk(plan, disk.id)
  for (const id of sr.$PBDs) {
    removeFromList(plan.edit(plan.get(id, 'PBD').host, 'host').$PBDs, id)
    plan.remove(id, 'PBD')
  }
  const pool = plan.get(sr.$pool, 'pool')
  if (pool.default_SR === srId || pool.crashDumpSr === srId || pool.suspendSr === srId || pool.haSrs.includes(srId)) {
    const edited = plan.edit(sr.$pool, 'pool')
    if (edited.default_SR === srId) delete edited.default_SR
    if (edited.crashDumpSr === srId) delete edited.crashDumpSr
    if (edited.suspendSr === srId) delete edited.suspendSr
    removeFromList(edited.haSrs, srId)
  }
  forgetMessages(plan, [sr.uuid])
  plan.remove(srId, 'SR')
}

/** DELETE: the records, then the folder with the disks' files. */
export async function destroySr(op: Operation, object: { readonly id: string }): Promise<void> {
  preview(op.env, (plan) => removeSr(plan, object.id))
  const run = new Run(op, 2)
  await run.wait()
  await run.apply((plan) => removeSr(plan, object.id))
  await op.env.disks?.destroySr(object.id)
}

/** The records go; the folder stays, with the disks' files, which a later start does not collect either. */
const forget: ActionHandler = async (op, object) => {
  preview(op.env, (plan) => removeSr(plan, object.id))
  const run = new Run(op, 2)
  await run.wait()
  await run.apply((plan) => removeSr(plan, object.id))
  return undefined
}

function plugged(plan: Plan, pbdId: string, attached: boolean): void {
  const pbd = plan.get(pbdId, 'PBD')
  if (pbd.attached === attached) throw incorrectState({ actual: pbd.attached, expected: !attached, object: pbd.id, property: 'attached' })
  requireHostState(plan.get(pbd.host, 'host'), 'Running')
  if (!attached) requireDisksFree(plan, pbd.SR, pbd.host)
  plan.edit(pbdId, 'PBD').attached = attached
}

const plugging =
  (attached: boolean): ActionHandler =>
  async (op, object) => {
    preview(op.env, (plan) => plugged(plan, object.id, attached))
    await new Run(op, 1).apply((plan) => plugged(plan, object.id, attached))
    return undefined
  }

export const srLifecycleActions: Readonly<Record<string, ActionHandler>> = { forget }

export const pbdActions: Readonly<Record<string, ActionHandler>> = { plug: plugging(true), unplug: plugging(false) }
