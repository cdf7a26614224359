import { isKeelError } from '../errors.js'
import type { Created, XoRecord } from '../driver/types.js'
import { NULL_REF } from '../xapi/datamodel/index.js'
import type { XmlRpcStruct, XmlRpcValue } from '../xapi/xml-rpc.js'
import type { Explicit } from './calls.js'
import type { CallContext, Handler } from './context.js'
import { handleInvalid, operationNotAllowed, vmBadPowerState, XapiFailure } from './failures.js'

/** The user the simulator's lab operations are recorded as (and the seeded lab's creator). */
export const SIMULATOR_USER = 'xapi-simulator'

export const text = (value: XmlRpcValue | undefined): string => (typeof value === 'string' ? value : String(value))

/** The lab record behind a ref of class `cls`, or HANDLE_INVALID. */
export function labObject(context: CallContext, cls: string, ref: XmlRpcValue | undefined): XoRecord {
  const stored = context.db.expect(cls, text(ref))
  const record = context.feed.labRecord(stored.ref)
  if (record === undefined || record['_xapiRef'] !== stored.ref) throw handleInvalid(cls, stored.ref)
  return record
}

/** A lab failure as XAPI words it (shared notes on xapi §1.3). */
export function failure(error: unknown, ref: string, cls: string): unknown {
  if (!isKeelError(error)) return error
  const data = error.data ?? {}
  switch (error.code) {
    case 'INCORRECT_STATE': {
      const expected = Array.isArray(data['expected']) ? String(data['expected'][0]) : String(data['expected'])
      if (cls === 'VM' && data['property'] === 'power_state') return vmBadPowerState(ref, expected, String(data['actual']))
      return operationNotAllowed(error.message)
    }
    case 'NO_SUCH_OBJECT':
      return handleInvalid(cls, ref)
    default:
      return operationNotAllowed(error.message)
  }
}

export const operationContext = (context: CallContext) => ({
  signal: context.signal,
  userId: SIMULATOR_USER,
  progress: (percent: number) => context.progress(percent / 100),
})

async function perform(context: CallContext, cls: string, ref: XmlRpcValue | undefined, action: string, params: Record<string, unknown> = {}): Promise<Created | undefined> {
  const record = labObject(context, cls, ref)
  if (cls === 'VM' && record.type !== 'VM') {
    if (record.type === 'VM-controller') throw operationNotAllowed('the control domain cannot be managed this way')
    throw new XapiFailure('VM_IS_TEMPLATE', text(ref))
  }
  try {
    return await context.driver.perform(record, action, params, operationContext(context))
  } catch (error) {
    throw failure(error, text(ref), cls)
  }
}

/** The ref of what an operation created (the lab feed has already added it). */
export function createdRef(context: CallContext, created: Created | undefined): string {
  const record = created === undefined ? undefined : context.driver.getObject(created.id)
  if (record === undefined) throw new XapiFailure('INTERNAL_ERROR', 'the operation created nothing')
  return String(record['_xapiRef'])
}

const action = (cls: string, name: string): Handler => async (context, [ref]) => {
  await perform(context, cls, ref, name)
  return ''
}

const creating = (cls: string, name: string): Handler => async (context, [ref, newName]) =>
  createdRef(context, await perform(context, cls, ref, name, { name_label: text(newName) }))

async function destroy(context: CallContext, cls: string, ref: XmlRpcValue | undefined): Promise<string> {
  const record = labObject(context, cls, ref)
  if (!context.driver.capabilities.destroy.includes(record.type)) throw operationNotAllowed(`a ${record.type} cannot be destroyed here`)
  try {
    await context.driver.destroy(record, operationContext(context))
  } catch (error) {
    throw failure(error, text(ref), cls)
  }
  return ''
}

async function createVdi(context: CallContext, args: XmlRpcStruct): Promise<string> {
  const disks = context.driver.disks
  const sr = labObject(context, 'SR', args['SR'])
  // Inside a record nothing is coerced: XML-RPC clients send the int as a string.
  const raw = args['virtual_size']
  const size = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw
  if (disks === undefined) throw operationNotAllowed('this lab serves no disk content')
  if (typeof size !== 'number' || size < 1) throw new XapiFailure('INVALID_VALUE', 'virtual_size', String(size))
  try {
    const session = await disks.importVdi(sr, { name_label: text(args['name_label'] ?? ''), name_description: text(args['name_description'] ?? ''), size }, SIMULATOR_USER)
    return createdRef(context, await session.commit())
  } catch (error) {
    throw failure(error, text(args['SR']), 'SR')
  }
}

async function resizeVdi(context: CallContext, ref: XmlRpcValue | undefined, size: XmlRpcValue | undefined): Promise<string> {
  const record = labObject(context, 'VDI', ref)
  try {
    await context.driver.update(record, { size })
  } catch (error) {
    if (isKeelError(error) && error.code === 'INVALID_PARAMETERS') throw new XapiFailure('INVALID_VALUE', 'size', text(size))
    throw failure(error, text(ref), 'VDI')
  }
  return ''
}

/**
 * VM.copy: the lab's clone (new disks with the content of the originals),
 * then each new disk moved to `sr` unless it is the null ref, as XAPI copies
 * every disk to the SR given. A copy that cannot be finished is destroyed:
 * no half copy is left behind.
 */
async function copyVm(context: CallContext, ref: XmlRpcValue | undefined, newName: XmlRpcValue | undefined, sr: XmlRpcValue | undefined): Promise<string> {
  const target = text(sr) === NULL_REF ? undefined : labObject(context, 'SR', sr)
  const half = { ...context, progress: (value: number) => context.progress(value / 2) }
  const copyRef = createdRef(context, await perform(half, 'VM', ref, 'clone', { name_label: text(newName) }))
  if (target === undefined) return copyRef
  const copy = labObject(context, 'VM', copyRef)
  try {
    const disks = (Array.isArray(copy['$VBDs']) ? copy['$VBDs'] : [])
      .map((id) => context.driver.getObject(String(id))?.['VDI'])
      .map((id) => (typeof id === 'string' ? context.driver.getObject(id) : undefined))
      .filter((vdi): vdi is XoRecord => vdi?.type === 'VDI' && vdi['$SR'] !== target.id)
    for (const [i, vdi] of disks.entries()) {
      await context.driver.perform(vdi, 'migrate', { srId: target.id }, { signal: context.signal, userId: SIMULATOR_USER, progress: () => {} })
      context.progress(0.5 + (i + 1) / disks.length / 2)
    }
  } catch (error) {
    await context.driver.destroy(labObject(context, 'VM', copyRef), { signal: new AbortController().signal, userId: SIMULATOR_USER, progress: () => {} })
    throw failure(error, text(sr), 'SR')
  }
  return copyRef
}

/**
 * Moves every guest off a host, each to the first other host that takes it
 * (enabled, running, room enough), as XAPI's host.evacuate; a guest no host
 * takes fails the call with NO_HOSTS_AVAILABLE, the guests moved so far staying
 * where they went.
 */
async function evacuate(context: CallContext, ref: XmlRpcValue | undefined): Promise<string> {
  const host = labObject(context, 'host', ref)
  const guests = (Array.isArray(host['residentVms']) ? host['residentVms'] : [])
    .map((id) => context.driver.getObject(String(id)))
    .filter((vm): vm is XoRecord => vm?.type === 'VM' && (vm['power_state'] === 'Running' || vm['power_state'] === 'Paused'))
  const targets = [...context.driver.objectsOfType('host')].filter((other) => other.id !== host.id && other['$pool'] === host['$pool'])
  for (const [i, guest] of guests.entries()) {
    let moved = false
    for (const target of targets) {
      if (target['enabled'] !== true || target['power_state'] !== 'Running') continue
      try {
        await context.driver.perform(guest, 'migrate', { hostId: target.id }, { signal: context.signal, userId: SIMULATOR_USER, progress: () => {} })
        moved = true
        break
      } catch (error) {
        if (!isKeelError(error) || (error.code !== 'INVALID_PARAMETERS' && error.code !== 'INCORRECT_STATE')) throw failure(error, String(guest['_xapiRef']), 'VM')
      }
    }
    if (!moved) throw new XapiFailure('NO_HOSTS_AVAILABLE')
    context.progress((i + 1) / guests.length)
  }
  return ''
}

const asyncOnes: Readonly<Record<string, Handler>> = {
  'VM.start': action('VM', 'start'),
  'VM.start_on': async (context, [ref, host]) => {
    const hostRecord = labObject(context, 'host', host)
    await perform(context, 'VM', ref, 'start', { hostId: hostRecord.id })
    return ''
  },
  'VM.clean_shutdown': action('VM', 'clean_shutdown'),
  'VM.hard_shutdown': action('VM', 'hard_shutdown'),
  'VM.shutdown': action('VM', 'clean_shutdown'),
  'VM.clean_reboot': action('VM', 'clean_reboot'),
  'VM.hard_reboot': action('VM', 'hard_reboot'),
  'VM.suspend': action('VM', 'suspend'),
  'VM.resume': action('VM', 'resume'),
  'VM.pause': action('VM', 'pause'),
  'VM.unpause': action('VM', 'unpause'),
  'VM.snapshot': creating('VM', 'snapshot'),
  'VM.clone': creating('VM', 'clone'),
  'VM.copy': (context, [ref, newName, sr]) => copyVm(context, ref, newName, sr),
  'VM.revert': async (context, [ref]) => {
    const snapshot = labObject(context, 'VM', ref)
    if (snapshot.type !== 'VM-snapshot') throw operationNotAllowed(`${text(ref)} is not a snapshot`)
    const vm = context.driver.getObject(String(snapshot['$snapshot_of']))
    if (vm === undefined) throw operationNotAllowed('the snapshot\u2019s VM is gone')
    await perform(context, 'VM', vm['_xapiRef'] as string, 'revert_snapshot', { snapshotId: snapshot.id })
    return ''
  },
  'VM.destroy': (context, [ref]) => destroy(context, 'VM', ref),
  'VM.pool_migrate': async (context, [ref, host]) => {
    const target = labObject(context, 'host', host)
    await perform(context, 'VM', ref, 'migrate', { hostId: target.id })
    return ''
  },
  'host.evacuate': (context, [ref]) => evacuate(context, ref),
  'host.enable': action('host', 'enable'),
  'host.disable': action('host', 'disable'),
  'host.reboot': action('host', 'clean_reboot'),
  'host.shutdown': action('host', 'clean_shutdown'),
  'host.power_on': action('host', 'start'),
  'SR.scan': action('SR', 'scan'),
  'VDI.create': (context, [record]) => createVdi(context, (record ?? {}) as XmlRpcStruct),
  'VDI.destroy': (context, [ref]) => destroy(context, 'VDI', ref),
  'VDI.resize': (context, [ref, size]) => resizeVdi(context, ref, size),
  // driver_params (SM-specific) are taken and ignored, as the lab has no SM backends.
  'VDI.snapshot': async (context, [ref]) => {
    const record = labObject(context, 'VDI', ref)
    if (record.type !== 'VDI') throw operationNotAllowed(`${text(ref)} is a snapshot`)
    try {
      return createdRef(context, await context.driver.snapshotVdi(record, operationContext(context)))
    } catch (error) {
      throw failure(error, text(ref), 'VDI')
    }
  },
}

/** Handlers offered as Async.<Class>.<message> too. */
export const withAsync = (handlers: Readonly<Record<string, Handler>>): Readonly<Record<string, Explicit>> =>
  Object.fromEntries(Object.entries(handlers).map(([method, handler]) => [method, { handler, async: true }]))

/** Lifecycle messages, run on the lab's operations, each also as Async.<Class>.<message>. */
export const actionHandlers: Readonly<Record<string, Explicit>> = withAsync(asyncOnes)
