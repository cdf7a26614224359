import { alreadyExists, incorrectState, invalidParameters, noSuchObject } from '../../../errors.js'
import { NULL_REF } from '../../../xapi/datamodel/index.js'
import { optionalBoolean, optionalInteger, optionalString, optionalStringMap, optionalStrings, requiredString } from '../../lab/operations/params.js'
import type { Created, OperationContext, XoRecord } from '../../types.js'
import { XapiError, type XapiLocation } from '../types.js'
import { created, step, type Env, type Params, type Target, type XapiAction, type XapiCreator } from './context.js'
import type { XapiDestroyer } from './destroy.js'
import { newVdiRecord } from '../new-vdi.js'
import { createSr } from './sr-lifecycle.js'

/**
 * A VM's drives, interfaces and new disks, through XAPI's constructors and
 * plug messages, with the lab's answers to what XAPI would refuse: a device
 * number used once per VM (the first free one XAPI offers when none is
 * given), only a running VM's devices plugged or unplugged, a plugged one
 * not destroyed. What the index shows is checked first; XAPI has the last
 * word when the index lags.
 */

interface Located extends XapiLocation {
  readonly record: XoRecord
}

function locate(env: Env, id: string, type: string): Located {
  const record = env.index.getObject(id)
  const location = record === undefined ? undefined : env.locator.locate(record)
  if (record === undefined || location === undefined) throw noSuchObject(id, type)
  return { record, ...location }
}

function samePool(a: Located, b: Located, field: string): void {
  if (a.pool.poolId !== b.pool.poolId) throw invalidParameters([{ path: `body.${field}`, message: 'must be in the VM\u2019s pool' }])
}

const links = (record: XoRecord, field: string): string[] => (Array.isArray(record[field]) ? record[field].map(String) : [])

/** `wanted` if the VM's devices do not hold it, or the first number XAPI allows. */
async function deviceNumber(env: Env, vm: Located, kind: 'VBD' | 'VIF', wanted: string | undefined, context: OperationContext): Promise<string> {
  const [listField, numberField, param] = kind === 'VBD' ? ['$VBDs', 'position', 'userdevice'] : ['VIFs', 'device', 'device']
  if (wanted !== undefined && wanted !== 'autodetect') {
    const number = String(Number(wanted))
    if (links(vm.record, listField).some((id) => String(env.index.getObject(id)?.[numberField]) === number)) throw alreadyExists(kind, param, number)
    return number
  }
  const [first] = await vm.pool.call<string[]>(`VM.get_allowed_${kind}_devices`, [vm.ref], { signal: context.signal })
  if (first === undefined) throw incorrectState({ actual: 0, expected: 1, object: vm.record.id, property: `free ${kind} devices` })
  return first
}

/** XAPI's refusal of a device number in use, as the lab answers it. */
async function numbered<T>(kind: 'VBD' | 'VIF', run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    if (error instanceof XapiError && error.code === 'DEVICE_ALREADY_EXISTS') throw alreadyExists(kind, kind === 'VBD' ? 'userdevice' : 'device', String(error.params[0]))
    throw error
  }
}

const createVdi: XapiCreator = async (env, params, context) => {
  const sr = locate(env, requiredString(params, 'srId'), 'SR')
  const size = optionalInteger(params, 'virtual_size')
  if (size === undefined || size < 1) throw invalidParameters([{ path: 'body.virtual_size', message: 'must be a positive integer' }])
  if (sr.record['content_type'] === 'iso') throw invalidParameters([{ path: 'body.srId', message: 'an ISO library holds no new disks' }])
  const record = newVdiRecord({
    name_label: requiredString(params, 'name_label'),
    name_description: optionalString(params, 'name_description') ?? '',
    SR: sr.ref,
    virtual_size: size,
  })
  return created(env, sr.pool, 'VDI', await sr.pool.callAsync<string>('VDI.create', [record], step(context)))
}

const createVbd: XapiCreator = async (env, params, context) => {
  const vm = locate(env, requiredString(params, 'VM'), 'VM')
  const vdiId = optionalString(params, 'VDI')
  const cd = (optionalString(params, 'type') ?? 'Disk') === 'CD'
  if (vdiId === undefined && !cd) throw invalidParameters([{ path: 'body.VDI', message: 'is required for a disk drive' }])
  const vdi = vdiId === undefined ? undefined : locate(env, vdiId, 'VDI')
  if (vdi !== undefined) samePool(vm, vdi, 'VDI')
  const mode = optionalString(params, 'mode') ?? (cd ? 'RO' : 'RW')
  if (cd && mode !== 'RO') throw invalidParameters([{ path: 'body.mode', message: 'a CD drive is read-only' }])
  const userdevice = await deviceNumber(env, vm, 'VBD', optionalString(params, 'userdevice'), context)
  const record = {
    VM: vm.ref,
    VDI: vdi?.ref ?? NULL_REF,
    userdevice,
    bootable: optionalBoolean(params, 'bootable') ?? false,
    mode,
    type: cd ? 'CD' : 'Disk',
    empty: vdi === undefined,
    unpluggable: true,
    other_config: {},
    qos_algorithm_type: '',
    qos_algorithm_params: {},
  }
  return created(env, vm.pool, 'VBD', await numbered('VBD', () => vm.pool.callAsync<string>('VBD.create', [record], step(context))))
}

const createVif: XapiCreator = async (env, params, context) => {
  const vm = locate(env, requiredString(params, 'vmId'), 'VM')
  const network = locate(env, requiredString(params, 'networkId'), 'network')
  samePool(vm, network, 'networkId')
  const device = await deviceNumber(env, vm, 'VIF', optionalString(params, 'device'), context)
  const record = {
    device,
    network: network.ref,
    VM: vm.ref,
    MAC: (optionalString(params, 'MAC') ?? '').toLowerCase(),
    MTU: optionalInteger(params, 'MTU') ?? (Number(network.record['MTU']) || 1500),
    other_config: { ...optionalStringMap(params, 'other_config') },
    qos_algorithm_type: '',
    qos_algorithm_params: {},
    locking_mode: optionalString(params, 'locking_mode') ?? 'network_default',
    ipv4_allowed: [...(optionalStrings(params, 'ipv4_allowed') ?? [])],
    ipv6_allowed: [...(optionalStrings(params, 'ipv6_allowed') ?? [])],
  }
  return created(env, vm.pool, 'VIF', await numbered('VIF', () => vm.pool.callAsync<string>('VIF.create', [record], step(context))))
}

/** POST /<collection>, by type. */
export const creatorsByType: Readonly<Record<string, XapiCreator>> = { VDI: createVdi, VBD: createVbd, VIF: createVif, SR: createSr }

const vmOf = (env: Env, device: XoRecord): XoRecord | undefined => env.index.getObject(String(device.type === 'VBD' ? device['VM'] : device['$VM']))

/** connect (plug) and disconnect (unplug) of a running VM's device. */
const plugging =
  (attached: boolean): XapiAction =>
  async (env, { object: given, pool, ref, cls }, _params, context) => {
    const object = env.index.getObject(given.id) ?? given
    const vm = vmOf(env, object)
    if (vm !== undefined && vm['power_state'] !== 'Running') {
      throw incorrectState({ actual: vm['power_state'], expected: 'Running', object: vm.id, property: 'power_state' })
    }
    if (object['attached'] === attached) throw incorrectState({ actual: attached, expected: !attached, object: object.id, property: 'attached' })
    await pool.callAsync(`${cls}.${attached ? 'plug' : 'unplug'}`, [ref], step(context))
    return undefined
  }

export const deviceActions: Readonly<Record<string, XapiAction>> = { connect: plugging(true), disconnect: plugging(false) }

/** A device that is not plugged goes; its disk or network stays. */
export const destroyDevice: XapiDestroyer = async ({ object, pool, ref, cls }: Target, context) => {
  if (await pool.call<boolean>(`${cls}.get_currently_attached`, [ref], { signal: context.signal })) throw incorrectState({ actual: true, expected: false, object: object.id, property: 'attached' })
  await pool.callAsync(`${cls}.destroy`, [ref], step(context))
}
