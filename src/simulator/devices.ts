import type { XoRecord } from '../driver/types.js'
import { isKeelError } from '../errors.js'
import { NULL_REF } from '../xapi/datamodel/index.js'
import type { XmlRpcStruct, XmlRpcValue } from '../xapi/xml-rpc.js'
import { createdRef, labObject, operationContext, text, withAsync } from './actions.js'
import type { Explicit } from './calls.js'
import type { CallContext, Handler } from './context.js'
import { handleInvalid, operationNotAllowed, vmBadPowerState, XapiFailure } from './failures.js'

/**
 * VBDs, VIFs and blank VMs, on the lab's device operations: VBD and VIF
 * create, destroy, plug and unplug, a CD drive's insert and eject, VM.create, and the devices a VM still
 * has free, with XAPI's errors (datamodel_errors.ml): DEVICE_ALREADY_ATTACHED
 * and DEVICE_ALREADY_DETACHED [device], DEVICE_ALREADY_EXISTS [number],
 * VM_BAD_POWER_STATE [vm, running, actual], MAC_INVALID [mac], VBD_NOT_EMPTY and
 * VBD_IS_EMPTY [vbd].
 */

/** Device slots XAPI offers an HVM guest: disks 0 to 15, interfaces 0 to 6. */
const VBD_SLOTS = 16
const VIF_SLOTS = 7

type Device = 'VBD' | 'VIF'

/** A lab refusal of a device operation as XAPI words it. */
function deviceFailure(context: CallContext, error: unknown, cls: string, ref: string, params: Readonly<Record<string, unknown>> = {}): unknown {
  if (!isKeelError(error)) return error
  const data = error.data ?? {}
  switch (error.code) {
    case 'INCORRECT_STATE':
      if (data['property'] === 'attached') return new XapiFailure(data['actual'] === true ? 'DEVICE_ALREADY_ATTACHED' : 'DEVICE_ALREADY_DETACHED', ref)
      if (data['property'] === 'power_state') {
        const vm = context.driver.getObject(String(data['object']))
        return vmBadPowerState(String(vm?.['_xapiRef'] ?? NULL_REF), String(data['expected']), String(data['actual']))
      }
      return operationNotAllowed(error.message)
    case 'OBJECT_ALREADY_EXISTS':
      return new XapiFailure('DEVICE_ALREADY_EXISTS', String(data['value']))
    case 'INVALID_PARAMETERS': {
      const path = Array.isArray(data['errors']) ? String((data['errors'][0] as { path?: unknown } | undefined)?.path) : ''
      if (path === 'body.MAC') return new XapiFailure('MAC_INVALID', String(params['MAC']))
      if (path === 'body.mode') return new XapiFailure('VBD_CDS_MUST_BE_READONLY')
      return operationNotAllowed(error.message)
    }
    case 'NO_SUCH_OBJECT':
      return handleInvalid(cls, ref)
    default:
      return operationNotAllowed(error.message)
  }
}

/** The VM a device goes on: the lab gives devices to VMs only, not to templates or snapshots. */
function guest(context: CallContext, ref: XmlRpcValue | undefined): XoRecord {
  const vm = labObject(context, 'VM', ref)
  if (vm.type === 'VM') return vm
  if (vm.type === 'VM-template' || vm.type === 'VM-snapshot') throw new XapiFailure('VM_IS_TEMPLATE', text(ref))
  throw operationNotAllowed('the control domain cannot be managed this way')
}

/** Inside a record nothing is coerced: XML-RPC clients send an int as a string. */
function integer(value: XmlRpcValue | undefined, field: string): number | undefined {
  if (value === undefined) return undefined
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value
  if (typeof number !== 'number' || !Number.isSafeInteger(number)) throw new XapiFailure('FIELD_TYPE_ERROR', field)
  return number
}

const optional = (value: XmlRpcValue | undefined): string | undefined => (value === undefined ? undefined : text(value))
const stringMap = (value: XmlRpcValue | undefined): Record<string, string> | undefined =>
  value !== undefined && typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
    ? Object.fromEntries(Object.entries(value as XmlRpcStruct).map(([key, entry]) => [key, text(entry)]))
    : undefined
const strings = (value: XmlRpcValue | undefined): string[] | undefined => (Array.isArray(value) ? value.map(text) : undefined)

async function create(context: CallContext, cls: Device, params: Record<string, unknown>, ref: string): Promise<string> {
  try {
    return createdRef(context, await context.driver.create(cls, params, operationContext(context)))
  } catch (error) {
    throw deviceFailure(context, error, cls, ref, params)
  }
}

function createVbd(context: CallContext, args: XmlRpcStruct): Promise<string> {
  const vm = guest(context, args['VM'])
  const type = text(args['type'] ?? 'Disk')
  if (type !== 'Disk' && type !== 'CD') throw new XapiFailure('VALUE_NOT_SUPPORTED', 'type', type, 'the lab has disk and CD drives only')
  const vdiRef = text(args['VDI'] ?? NULL_REF)
  const empty = args['empty'] === true || vdiRef === NULL_REF
  const userdevice = optional(args['userdevice'])
  const params = {
    VM: vm.id,
    type,
    ...(empty ? {} : { VDI: labObject(context, 'VDI', vdiRef).id }),
    ...(args['mode'] === undefined ? {} : { mode: text(args['mode']) }),
    ...(args['bootable'] === undefined ? {} : { bootable: args['bootable'] === true }),
    ...(userdevice === undefined ? {} : { userdevice }),
  }
  if (type === 'Disk' && empty) throw new XapiFailure('VBD_NOT_REMOVABLE_MEDIA', NULL_REF)
  return create(context, 'VBD', params, text(args['VM']))
}

function createVif(context: CallContext, args: XmlRpcStruct): Promise<string> {
  const vm = guest(context, args['VM'])
  const network = labObject(context, 'network', args['network'])
  const device = optional(args['device']) ?? ''
  const mtu = integer(args['MTU'], 'MTU')
  const params = {
    vmId: vm.id,
    networkId: network.id,
    MAC: optional(args['MAC']) ?? '',
    ...(device === '' ? {} : { device }),
    ...(mtu === undefined || mtu === 0 ? {} : { MTU: mtu }),
    ...(args['locking_mode'] === undefined ? {} : { locking_mode: text(args['locking_mode']) }),
    ...(strings(args['ipv4_allowed']) === undefined ? {} : { ipv4_allowed: strings(args['ipv4_allowed']) }),
    ...(strings(args['ipv6_allowed']) === undefined ? {} : { ipv6_allowed: strings(args['ipv6_allowed']) }),
    ...(stringMap(args['other_config']) === undefined ? {} : { other_config: stringMap(args['other_config']) }),
  }
  return create(context, 'VIF', params, text(args['VM']))
}

const plugging =
  (cls: Device, action: 'connect' | 'disconnect'): Handler =>
  async (context, [ref]) => {
    const device = labObject(context, cls, ref)
    try {
      await context.driver.perform(device, action, {}, operationContext(context))
    } catch (error) {
      throw deviceFailure(context, error, cls, text(ref))
    }
    return ''
  }

const destroying =
  (cls: Device): Handler =>
  async (context, [ref]) => {
    const device = labObject(context, cls, ref)
    try {
      await context.driver.destroy(device, operationContext(context))
    } catch (error) {
      // XAPI refuses a plugged device's destroy through its allowed operations.
      if (isKeelError(error) && error.data?.['property'] === 'attached') throw operationNotAllowed(`${cls} currently attached to a running VM`)
      throw deviceFailure(context, error, cls, text(ref))
    }
    return ''
  }

/** VBD.insert and VBD.eject: a CD drive's disk, the VM in any state. */
const media =
  (inserting: boolean): Handler =>
  async (context, [ref, vdiRef]) => {
    const vbd = labObject(context, 'VBD', ref)
    const vdi = inserting ? labObject(context, 'VDI', vdiRef) : undefined
    try {
      await context.driver.changeMedia(vbd, vdi?.id, operationContext(context))
    } catch (error) {
      const property = isKeelError(error) ? error.data?.['property'] : undefined
      if (property === 'is_cd_drive') throw new XapiFailure('VBD_NOT_REMOVABLE_MEDIA', text(ref))
      if (property === 'VDI') throw new XapiFailure(inserting ? 'VBD_NOT_EMPTY' : 'VBD_IS_EMPTY', text(ref))
      throw deviceFailure(context, error, 'VBD', text(ref))
    }
    return ''
  }

/** XAPI's VM.create: a halted VM with no devices; memory and CPU fields as XAPI checks them, the rest of its settings from the lab's template. */
async function createVm(context: CallContext, args: XmlRpcStruct): Promise<string> {
  const memory = (field: string): number => integer(args[field], field) ?? 0
  const pool = [...context.driver.objectsOfType('pool')][0]
  if (pool === undefined) throw operationNotAllowed('the lab has no pool')
  const fields = {
    name_label: text(args['name_label'] ?? ''),
    name_description: text(args['name_description'] ?? ''),
    cpus: { max: integer(args['VCPUs_max'], 'VCPUs_max') ?? 1, atStartup: integer(args['VCPUs_at_startup'], 'VCPUs_at_startup') ?? 1 },
    memory: { staticMin: memory('memory_static_min'), staticMax: memory('memory_static_max'), dynamicMin: memory('memory_dynamic_min'), dynamicMax: memory('memory_dynamic_max') },
    hvm: text(args['HVM_boot_policy'] ?? '') !== '',
    PV_args: text(args['PV_args'] ?? ''),
    other_config: stringMap(args['other_config']) ?? {},
  }
  if (args['is_a_template'] === true) throw new XapiFailure('VALUE_NOT_SUPPORTED', 'is_a_template', 'true', 'the lab makes templates from VMs only')
  try {
    return createdRef(context, await context.driver.createBlankVm(pool, fields, operationContext(context)))
  } catch (error) {
    if (!isKeelError(error)) throw error
    if (error.code !== 'INVALID_PARAMETERS') throw operationNotAllowed(error.message)
    const path = Array.isArray(error.data?.['errors']) ? String((error.data['errors'][0] as { path?: unknown } | undefined)?.path) : ''
    if (path === 'body.memory') throw new XapiFailure('MEMORY_CONSTRAINT_VIOLATION', 'Memory limits must satisfy: static_min <= dynamic_min <= dynamic_max <= static_max')
    throw new XapiFailure('INVALID_VALUE', path.replace(/^body\./, ''), '')
  }
}

/** The device numbers a VM has free, as strings, lowest first. */
function allowed(context: CallContext, ref: XmlRpcValue | undefined, cls: Device): string[] {
  const vm = labObject(context, 'VM', ref)
  const links = cls === 'VBD' ? vm['$VBDs'] : vm['VIFs']
  const used = new Set((Array.isArray(links) ? links : []).map((id) => context.driver.getObject(String(id))?.[cls === 'VBD' ? 'position' : 'device']).map(String))
  return Array.from({ length: cls === 'VBD' ? VBD_SLOTS : VIF_SLOTS }, (_, i) => String(i)).filter((slot) => !used.has(slot))
}

export const deviceHandlers: Readonly<Record<string, Explicit>> = {
  ...withAsync({
    'VBD.create': (context, [args]) => createVbd(context, (args ?? {}) as XmlRpcStruct),
    'VBD.destroy': destroying('VBD'),
    'VBD.plug': plugging('VBD', 'connect'),
    'VBD.unplug': plugging('VBD', 'disconnect'),
    'VBD.insert': media(true),
    'VBD.eject': media(false),
    'VIF.create': (context, [args]) => createVif(context, (args ?? {}) as XmlRpcStruct),
    'VIF.destroy': destroying('VIF'),
    'VIF.plug': plugging('VIF', 'connect'),
    'VIF.unplug': plugging('VIF', 'disconnect'),
    'VM.create': (context, [args]) => createVm(context, (args ?? {}) as XmlRpcStruct),
  }),
  'VM.get_allowed_VBD_devices': { handler: (context, [ref]) => allowed(context, ref, 'VBD') },
  'VM.get_allowed_VIF_devices': { handler: (context, [ref]) => allowed(context, ref, 'VIF') },
}
