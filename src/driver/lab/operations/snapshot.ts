import { randomUUID } from 'node:crypto'
import { incorrectState, invalidParameters, isKeelError } from '../../../errors.js'
import { INSTALLATION_MARK } from '../../../installation.js'
import type { VmRecord, VmSnapshotRecord } from '../../../model/records.js'
import { vmLinkDefaults } from '../record-defaults.js'
import { addVbd, addVdi, addVdiSnapshot, addVif, identity, randomMac } from './builders.js'
import { ALL_STATES, clearRuntime, haltedContainer, powerOn, requirePowerState, seconds } from './guest.js'
import { addToList } from './lists.js'
import { optionalString, optionalStringMap, requiredString, type ActionHandler, type Params } from './params.js'
import { chooseHost } from './placement.js'
import type { Frozen, Plan } from './plan.js'
import { runTransition, transitionSteps } from './power.js'
import { preview, Run, type Operation } from './run.js'
import { accountDisk, freeSpace, isThick } from './sr-usage.js'

/**
 * Snapshots, fast clones and reverts. None copies disk contents: new disks
 * share their blocks with the originals (thick SRs reserve the space), so
 * each takes the same steps and the same number of records whatever the
 * disk sizes.
 */

/** Steps that pass before a snapshot or clone shows. */
const COPY_WAITS = 2

/**
 * XAPI keeps the VM's power state in the snapshot's snapshot_info, which XO
 * records do not show; the lab keeps it in the snapshot's other_config.
 */
const POWER_STATE_AT_SNAPSHOT = 'power-state-at-snapshot'

/** A thick SR must have room for the full-size volumes a snapshot or clone reserves. */
function reserveThick(plan: Plan, vdiIds: readonly string[]): void {
  const needed = new Map<string, number>()
  for (const id of vdiIds) {
    const vdi = plan.get(id, 'VDI')
    if (isThick(plan.get(vdi.$SR, 'SR'))) needed.set(vdi.$SR, (needed.get(vdi.$SR) ?? 0) + vdi.size)
  }
  for (const [srId, bytes] of needed) {
    const free = freeSpace(plan.get(srId, 'SR'))
    if (free < bytes) throw incorrectState({ actual: free, expected: bytes, object: srId, property: 'free space' })
  }
}

/** The VM's disk drives, as [position, VDI id]. */
function diskDrives(plan: Plan, vm: Frozen<VmRecord>): Array<{ position: number; vdi: string }> {
  return vm.$VBDs.flatMap((id) => {
    const vbd = plan.get(id, 'VBD')
    return vbd.is_cd_drive || vbd.VDI === undefined ? [] : [{ position: Number(vbd.position), vdi: vbd.VDI }]
  })
}

/** The VM's configuration without its runtime state, as a halted copy of it has. */
function haltedSettings(vm: Frozen<VmRecord>): Omit<VmRecord, 'vulnerabilities'> {
  const { vulnerabilities: _, ...settings } = structuredClone(vm) as VmRecord
  clearRuntime(settings)
  return {
    ...settings,
    power_state: 'Halted',
    current_operations: {},
    os_version: null,
    // every link is in `settings` already, so these keep their places in the record
    ...vmLinkDefaults(),
  }
}

/**
 * A disk-only snapshot: a halted copy of the VM's settings, a VDI-snapshot
 * per disk and copies of its VIFs. Its other_config is the VM's, without
 * Keel's installation mark (a snapshot is marked only by whoever takes it),
 * plus the entries of the `other_config` parameter (given by Keel itself:
 * the REST schema does not take it).
 */
function snapshotVm(plan: Plan, vmId: string, params: Params, now: number, copies: ReadonlyMap<string, string>): string {
  const vm = plan.get(vmId, 'VM')
  requirePowerState(vm, ALL_STATES)
  const drives = diskDrives(plan, vm)
  reserveThick(plan, drives.map((drive) => drive.vdi))
  const time = seconds(now)
  const { [INSTALLATION_MARK]: _, ...inherited } = vm.other
  const snapshot = plan.add<VmSnapshotRecord>({
    ...haltedSettings(vm),
    type: 'VM-snapshot',
    ...identity(vm.$pool),
    name_label: optionalString(params, 'name_label') ?? vm.name_label,
    other: { ...inherited, [POWER_STATE_AT_SNAPSHOT]: vm.power_state, ...optionalStringMap(params, 'other_config') },
    $container: haltedContainer(plan, vm),
    snapshot_time: time,
    $snapshot_of: vm.id,
  })
  for (const { position, vdi } of drives) {
    addVbd(plan, { vm: snapshot, position, vdi: addVdiSnapshot(plan, vdi, time, copies.get(vdi)).id, attached: false })
  }
  for (const id of vm.VIFs) {
    const vif = plan.get(id, 'VIF')
    addVif(plan, { vm: snapshot, device: vif.device, network: vif.$network, mac: vif.MAC, attached: false, like: vif })
  }
  const edited = plan.edit(vm.id, 'VM')
  addToList(edited.snapshots, snapshot.id)
  // The VM now derives from its newest snapshot, which derives from the one before.
  edited.parent = snapshot.id
  return snapshot.id
}

/** A fast clone of a halted VM: new disks sharing the originals' blocks, new VIFs with new MACs. */
function cloneVm(plan: Plan, vmId: string, params: Params, userId: string, now: number, copies: ReadonlyMap<string, string>): string {
  const vm = plan.get(vmId, 'VM')
  requirePowerState(vm, ['Halted'])
  const drives = diskDrives(plan, vm)
  reserveThick(plan, drives.map((drive) => drive.vdi))
  const { parent: _parent, ...settings } = haltedSettings(vm)
  const base = identity(vm.$pool)
  const clone = plan.add<VmRecord>({
    ...settings,
    ...base,
    name_label: optionalString(params, 'name_label') ?? `${vm.name_label} (clone)`,
    creation: {
      date: new Date(now).toISOString(),
      ...(vm.creation?.template === undefined ? {} : { template: vm.creation.template }),
      user: userId,
      creator: userId,
    },
    bios_strings: 'system-serial-number' in vm.bios_strings ? { ...vm.bios_strings, 'system-serial-number': base.uuid } : { ...vm.bios_strings },
    vulnerabilities: structuredClone(vm.vulnerabilities) as VmRecord['vulnerabilities'],
  })
  for (const id of vm.$VBDs) {
    const vbd = plan.get(id, 'VBD')
    const position = Number(vbd.position)
    if (vbd.is_cd_drive || vbd.VDI === undefined) {
      addVbd(plan, { vm: clone, position, vdi: vbd.VDI, attached: false, cd: vbd.is_cd_drive })
      continue
    }
    const source = plan.get(vbd.VDI, 'VDI')
    const disk = addVdi(plan, {
      sr: source.$SR,
      poolId: source.$pool,
      name_label: source.name_label,
      name_description: source.name_description,
      size: source.size,
      tags: source.tags,
      ...(copies.has(source.id) ? { id: copies.get(source.id) } : {}),
    })
    addVbd(plan, { vm: clone, position, vdi: disk.id, attached: false })
  }
  for (const id of vm.VIFs) {
    const vif = plan.get(id, 'VIF')
    addVif(plan, { vm: clone, device: vif.device, network: vif.$network, mac: randomMac(), attached: false, like: vif })
  }
  plan.edit(clone.id, 'VM').$container = haltedContainer(plan, clone)
  return clone.id
}

/** What a revert puts back: the hardware configuration the snapshot recorded. */
const RESTORED = [
  'CPUs',
  'coresPerSocket',
  'cpuCap',
  'cpuWeight',
  'cpuMask',
  'memory',
  'boot',
  'virtualizationMode',
  'PV_args',
  'vga',
  'videoram',
  'viridian',
  'secureBoot',
  'expNestedHvm',
  'isNestedVirtEnabled',
  'hasVendorDevice',
  'needsVtpm',
  'nicType',
] as const

/**
 * A halted VM takes back its snapshot's configuration and disk sizes. Disks
 * keep their ids (their contents revert in place); disks added since the
 * snapshot stay as they are.
 */
function revertVm(plan: Plan, vmId: string, snapshotId: string): void {
  const snapshot = snapshotOf(plan, vmId, snapshotId)
  const vm = plan.edit(vmId, 'VM')
  requirePowerState(vm, ['Halted'])
  const saved = structuredClone(snapshot) as VmSnapshotRecord
  const target = vm as Record<string, unknown>
  for (const field of RESTORED) {
    if (saved[field] === undefined) delete target[field]
    else target[field] = saved[field]
  }
  vm.parent = snapshot.id
  const disks = new Set(diskDrives(plan, vm).map((drive) => drive.vdi))
  for (const vbdId of snapshot.$VBDs) {
    const copyId = plan.get(vbdId, 'VBD').VDI
    const copy = copyId === undefined ? undefined : plan.get(copyId, 'VDI-snapshot')
    if (copy?.$snapshot_of !== undefined && disks.has(copy.$snapshot_of)) restoreDisk(plan, copy.$snapshot_of, copy.size)
  }
}

function snapshotOf(plan: Plan, vmId: string, snapshotId: string): Frozen<VmSnapshotRecord> {
  const snapshot = plan.get(snapshotId, 'VM-snapshot')
  if (snapshot.$snapshot_of === vmId) return snapshot
  throw invalidParameters([{ path: 'body.snapshotId', message: `${snapshotId} is not a snapshot of VM ${vmId}` }])
}

function restoreDisk(plan: Plan, vdiId: string, size: number): void {
  const vdi = plan.edit(vdiId, 'VDI')
  accountDisk(plan, vdi, -1)
  vdi.size = size
  vdi.usage = isThick(plan.get(vdi.$SR, 'SR')) ? size : Math.min(vdi.usage, size)
  vdi.chainPhysicalUsage = vdi.usage
  accountDisk(plan, vdi, 1)
}

/**
 * A snapshot or clone: checked on a preview first, then shown after COPY_WAITS
 * steps. `copy` builds the new object in a plan and returns its id; its new
 * disks take the ids in `copies` (source disk → new id), whose content is
 * forked from the sources' just before the records are committed, so a disk
 * never shows before its content exists.
 */
function copyAction(
  type: 'VM' | 'VM-snapshot',
  copy: (plan: Plan, op: Operation, vmId: string, params: Params, copies: ReadonlyMap<string, string>) => string,
): ActionHandler {
  return async (op, object, params) => {
    const sources = preview(op.env, (plan) => {
      copy(plan, op, object.id, params, new Map())
      return diskDrives(plan, plan.get(object.id, 'VM')).map((drive) => plan.get(drive.vdi, 'VDI'))
    })
    const copies = new Map(sources.map((vdi) => [vdi.id, randomUUID()]))
    const run = new Run(op, COPY_WAITS + 1)
    await run.wait(COPY_WAITS)
    const disks = op.env.disks
    if (disks === undefined) return { id: await run.apply((plan) => copy(plan, op, object.id, params, copies)), type }
    const releases: Array<() => void> = []
    try {
      for (const vdi of sources) releases.push(await disks.fork({ id: vdi.id, sr: vdi.$SR }, [copies.get(vdi.id) as string], vdi.size))
      return { id: await run.apply((plan) => copy(plan, op, object.id, params, copies)), type }
    } catch (error) {
      for (const vdi of sources) await disks.remove({ id: copies.get(vdi.id) as string, sr: vdi.$SR })
      throw error
    } finally {
      for (const release of releases) release()
    }
  }
}

/** A revert puts each snapshotted disk's content back: forked from the disk snapshot, or copied when the disk moved SR since. */
async function revertContent(op: Operation, vmId: string, snapshotId: string): Promise<void> {
  const disks = op.env.disks
  if (disks === undefined) return
  const pairs = preview(op.env, (plan) => {
    const current = new Set(diskDrives(plan, plan.get(vmId, 'VM')).map((drive) => drive.vdi))
    return plan.get(snapshotId, 'VM-snapshot').$VBDs.flatMap((vbdId) => {
      const copyId = plan.get(vbdId, 'VBD').VDI
      const copy = copyId === undefined ? undefined : plan.get(copyId, 'VDI-snapshot')
      if (copy?.$snapshot_of === undefined || !current.has(copy.$snapshot_of)) return []
      return [{ copy, vdi: plan.get(copy.$snapshot_of, 'VDI') }]
    })
  })
  for (const { copy, vdi } of pairs) {
    if (copy.$SR === vdi.$SR) {
      const release = await disks.fork({ id: copy.id, sr: copy.$SR }, [vdi.id], copy.size)
      // The target's record exists already: nothing to keep the SR busy for.
      release()
    } else {
      await disks.copy({ id: copy.id, sr: copy.$SR }, { id: vdi.id, sr: vdi.$SR }, copy.size)
    }
  }
}

export const snapshotActions: Readonly<Record<string, ActionHandler>> = {
  snapshot: copyAction('VM-snapshot', (plan, op, vmId, params, copies) => snapshotVm(plan, vmId, params, op.env.clock(), copies)),
  clone: copyAction('VM', (plan, op, vmId, params, copies) => cloneVm(plan, vmId, params, op.userId, op.env.clock(), copies)),
  // As XO does: a live VM is powered off first (the snapshots are disk-only), and a
  // VM snapshotted while running is started again, on its host if it can.
  revert_snapshot: async (op, object, params) => {
    const snapshotId = requiredString(params, 'snapshotId')
    const { host, restart } = preview(op.env, (plan) => {
      const snapshot = snapshotOf(plan, object.id, snapshotId)
      const vm = plan.get(object.id, 'VM')
      if (vm.power_state === 'Halted') revertVm(plan, vm.id, snapshotId)
      return {
        host: vm.power_state === 'Halted' ? undefined : vm.$container,
        restart: snapshot.other[POWER_STATE_AT_SNAPSHOT] === 'Running',
      }
    })
    const startSteps = transitionSteps('start')
    const run = new Run(op, (host === undefined ? 0 : transitionSteps('hard_shutdown')) + 2 + (restart ? startSteps : 0))
    if (host !== undefined) await runTransition(run, op.env.clock, object.id, 'hard_shutdown')
    await run.wait()
    preview(op.env, (plan) => revertVm(plan, object.id, snapshotId))
    await revertContent(op, object.id, snapshotId)
    await run.apply((plan) => revertVm(plan, object.id, snapshotId))
    if (!restart) return undefined
    await run.wait(startSteps - 1)
    await run.apply((plan) => restartReverted(plan, object.id, host, op.env.clock()))
    return undefined
  },
}

/** XO starts the reverted VM and ignores a failure: the revert itself is done, the VM stays halted. */
function restartReverted(plan: Plan, vmId: string, preferred: string | undefined, now: number): void {
  const vm = plan.get(vmId, 'VM')
  if (vm.power_state !== 'Halted') return
  let hostId: string
  try {
    hostId = chooseHost(plan, vm, preferred).id
  } catch (error) {
    if (isKeelError(error)) return
    throw error
  }
  powerOn(plan, vmId, hostId, now)
}
