import { alreadyExists, incorrectState, invalidParameters } from '../../../errors.js'
import type { Created, XoRecord } from '../../types.js'
import { addVbd, addVdi, addVif, randomMac } from './builders.js'
import { requirePowerState } from './guest.js'
import {
  optionalBoolean,
  optionalInteger,
  optionalString,
  optionalStringMap,
  optionalStrings,
  requiredString,
  type ActionHandler,
  type Params,
} from './params.js'
import { addToList, removeFromList } from './lists.js'
import type { Plan } from './plan.js'
import { notAttached, removeVbd, removeVif } from './removal.js'
import { preview, Run, type Operation } from './run.js'
import { freeSpace, isThick } from './sr-usage.js'
import { createSr } from './sr-lifecycle.js'

/**
 * A VM's devices made, plugged, unplugged and removed one by one, with
 * XAPI's rules: a device number is used once per VM (the first free one
 * when none is given), a new device starts unplugged, only a running VM's
 * devices are plugged or unplugged, and a plugged one is not destroyed.
 */

/** What POST /<collection> creates: the new object's id and type. */
export type Creator = (op: Operation, params: Params) => Promise<Created>

/** `wanted` if it is free, or the lowest number `used` does not hold. */
function deviceNumber(used: readonly string[], wanted: string | undefined, type: string, field: string): number {
  if (wanted !== undefined && wanted !== 'autodetect') {
    if (!/^\d{1,2}$/.test(wanted)) throw invalidParameters([{ path: `body.${field}`, message: 'must be a device number or "autodetect"' }])
    if (used.includes(String(Number(wanted)))) throw alreadyExists(type, field, String(Number(wanted)))
    return Number(wanted)
  }
  let n = 0
  while (used.includes(String(n))) n++
  return n
}

function samePool(a: { readonly $pool: string }, b: { readonly $pool: string }, field: string): void {
  if (a.$pool !== b.$pool) throw invalidParameters([{ path: `body.${field}`, message: 'must be in the VM\u2019s pool' }])
}

function newVbd(plan: Plan, params: Params): string {
  const vm = plan.get(requiredString(params, 'VM'), 'VM')
  const vdiId = optionalString(params, 'VDI')
  const cd = (optionalString(params, 'type') ?? 'Disk') === 'CD'
  if (vdiId === undefined && !cd) throw invalidParameters([{ path: 'body.VDI', message: 'is required for a disk drive' }])
  if (vdiId !== undefined) samePool(vm, plan.get(vdiId, 'VDI'), 'VDI')
  const mode = optionalString(params, 'mode') ?? (cd ? 'RO' : 'RW')
  if (cd && mode !== 'RO') throw invalidParameters([{ path: 'body.mode', message: 'a CD drive is read-only' }])
  const used = vm.$VBDs.map((id) => plan.get(id, 'VBD').position)
  const position = deviceNumber(used, optionalString(params, 'userdevice'), 'VBD', 'userdevice')
  return addVbd(plan, { vm, position, vdi: vdiId, attached: false, cd, bootable: optionalBoolean(params, 'bootable') ?? false, readOnly: mode === 'RO' }).id
}

const MAC = /^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$/

function newVif(plan: Plan, params: Params): string {
  const vm = plan.get(requiredString(params, 'vmId'), 'VM')
  const network = plan.get(requiredString(params, 'networkId'), 'network')
  samePool(vm, network, 'networkId')
  const given = optionalString(params, 'MAC') ?? ''
  if (given !== '' && !MAC.test(given)) throw invalidParameters([{ path: 'body.MAC', message: 'must be a MAC address' }])
  const used = vm.VIFs.map((id) => plan.get(id, 'VIF').device)
  const device = deviceNumber(used, optionalString(params, 'device'), 'VIF', 'device')
  const vif = addVif(plan, { vm, device: String(device), network: network.id, mac: given === '' ? randomMac() : given.toLowerCase(), attached: false })
  const edited = plan.edit(vif.id, 'VIF')
  edited.MTU = optionalInteger(params, 'MTU') ?? network.MTU
  edited.lockingMode = lockingMode(optionalString(params, 'locking_mode')) ?? edited.lockingMode
  edited.allowedIpv4Addresses = [...(optionalStrings(params, 'ipv4_allowed') ?? [])]
  edited.allowedIpv6Addresses = [...(optionalStrings(params, 'ipv6_allowed') ?? [])]
  edited.other_config = { ...optionalStringMap(params, 'other_config') }
  return vif.id
}

const LOCKING_MODES = ['network_default', 'locked', 'unlocked', 'disabled'] as const

function lockingMode(value: string | undefined): (typeof LOCKING_MODES)[number] | undefined {
  if (value === undefined) return undefined
  const mode = LOCKING_MODES.find((candidate) => candidate === value)
  if (mode === undefined) throw invalidParameters([{ path: 'body.locking_mode', message: `must be one of ${LOCKING_MODES.join(', ')}` }])
  return mode
}

/** An empty disk: it reads as zeros until written; a thick SR must have room for all of it. */
function newVdi(plan: Plan, params: Params): string {
  const sr = plan.get(requiredString(params, 'srId'), 'SR')
  const size = optionalInteger(params, 'virtual_size')
  if (size === undefined || size < 1) throw invalidParameters([{ path: 'body.virtual_size', message: 'must be a positive integer' }])
  if (sr.content_type === 'iso') throw invalidParameters([{ path: 'body.srId', message: 'an ISO library holds no new disks' }])
  if (isThick(sr) && freeSpace(sr) < size) throw incorrectState({ actual: freeSpace(sr), expected: size, object: sr.id, property: 'free space' })
  return addVdi(plan, {
    sr: sr.id,
    poolId: sr.$pool,
    name_label: requiredString(params, 'name_label'),
    name_description: optionalString(params, 'name_description') ?? '',
    size,
  }).id
}

/** Checked on a preview, then made in one step. */
const creating =
  (type: string, build: (plan: Plan, params: Params) => string): Creator =>
  async (op, params) => {
    preview(op.env, (plan) => build(plan, params))
    return { id: await new Run(op, 1).apply((plan) => build(plan, params)), type }
  }

/** The lab's POST /<collection>, by type. */
export const creators = {
  VBD: creating('VBD', newVbd),
  VIF: creating('VIF', newVif),
  VDI: creating('VDI', newVdi),
  SR: createSr,
} as const

type Device = 'VBD' | 'VIF'

function plugged(plan: Plan, type: Device, id: string, attached: boolean): void {
  const device = plan.get(id, type)
  requirePowerState(plan.get(type === 'VBD' ? plan.get(id, 'VBD').VM : plan.get(id, 'VIF').$VM, 'VM'), ['Running'])
  if (device.attached === attached) throw incorrectState({ actual: device.attached, expected: !attached, object: id, property: 'attached' })
  plan.edit(id, type).attached = attached
}

/** connect (plug) and disconnect (unplug) of a running VM's device: one step. */
const plugging = (type: Device, attached: boolean): ActionHandler => async (op: Operation, object: XoRecord) => {
  preview(op.env, (plan) => plugged(plan, type, object.id, attached))
  await new Run(op, 1).apply((plan) => plugged(plan, type, object.id, attached))
  return undefined
}

export const vbdActions: Readonly<Record<string, ActionHandler>> = { connect: plugging('VBD', true), disconnect: plugging('VBD', false) }
export const vifActions: Readonly<Record<string, ActionHandler>> = { connect: plugging('VIF', true), disconnect: plugging('VIF', false) }

/** A device that is not plugged goes; its disk or network stays. */
export function removeDevice(type: Device): (plan: Plan, id: string) => void {
  return (plan, id) => {
    notAttached(plan.get(id, type))
    if (type === 'VBD') removeVbd(plan, id)
    else removeVif(plan, id)
  }
}

/**
 * A disk put into an empty CD drive (`vdiId`), or taken out of one
 * (undefined), the VM in any state, as XAPI's VBD.insert and VBD.eject.
 * The REST API has no such action: the XAPI simulator calls it directly.
 */
function swapMedia(plan: Plan, vbdId: string, vdiId: string | undefined): void {
  const vbd = plan.get(vbdId, 'VBD')
  if (!vbd.is_cd_drive) throw incorrectState({ actual: false, expected: true, object: vbdId, property: 'is_cd_drive' })
  if ((vbd.VDI === undefined) === (vdiId === undefined)) throw incorrectState({ actual: vbd.VDI ?? null, expected: vdiId === undefined ? 'a disk' : null, object: vbdId, property: 'VDI' })
  const edited = plan.edit(vbdId, 'VBD')
  if (vdiId === undefined) {
    if (vbd.VDI !== undefined) removeFromList(plan.edit(vbd.VDI, 'VDI').$VBDs, vbdId)
    delete edited.VDI
    return
  }
  samePool(plan.get(vbd.VM, 'VM'), plan.get(vdiId, 'VDI'), 'VDI')
  edited.VDI = vdiId
  addToList(plan.edit(vdiId, 'VDI').$VBDs, vbdId)
}

export async function changeMedia(op: Operation, vbd: XoRecord, vdiId: string | undefined): Promise<void> {
  preview(op.env, (plan) => swapMedia(plan, vbd.id, vdiId))
  await new Run(op, 1).apply((plan) => swapMedia(plan, vbd.id, vdiId))
}
