import { incorrectState } from '../../../errors.js'
import { requirePowerState } from './guest.js'
import { removeFromList } from './lists.js'
import type { Plan } from './plan.js'
import { accountDisk } from './sr-usage.js'

/**
 * Removing objects with everything that hangs on them, so that no link is
 * left dangling. Lists are copied before walking them, since removals edit
 * the records they come from.
 */

/** Messages about objects that are gone go with them. */
export function forgetMessages(plan: Plan, uuids: readonly string[]): void {
  const gone = new Set(uuids)
  for (const message of plan.all('message')) if (gone.has(message.$object)) plan.remove(message.id, 'message')
}

export const notAttached = (device: { readonly id: string; readonly attached: boolean }): void => {
  if (device.attached) throw incorrectState({ actual: true, expected: false, object: device.id, property: 'attached' })
}

export function removeVbd(plan: Plan, vbdId: string): void {
  const vbd = plan.get(vbdId, 'VBD')
  removeFromList(plan.edit(vbd.VM, 'VM', 'VM-snapshot', 'VM-template', 'VM-controller').$VBDs, vbd.id)
  if (vbd.VDI !== undefined) removeFromList(plan.edit(vbd.VDI, 'VDI', 'VDI-snapshot').$VBDs, vbd.id)
  plan.remove(vbd.id, 'VBD')
}

export function removeVif(plan: Plan, vifId: string): void {
  const vif = plan.get(vifId, 'VIF')
  removeFromList(plan.edit(vif.$VM, 'VM', 'VM-snapshot', 'VM-template', 'VM-controller').VIFs, vif.id)
  removeFromList(plan.edit(vif.$network, 'network').VIFs, vif.id)
  plan.remove(vif.id, 'VIF')
}

/**
 * A disk or disk snapshot, unless a running VM uses it. Disk drives using it
 * go, CD drives are emptied; its own snapshots stay, no longer linked to it.
 */
export function removeDisk(plan: Plan, id: string): void {
  const disk = plan.get(id, 'VDI', 'VDI-snapshot')
  const vbds = disk.$VBDs.map((vbdId) => plan.get(vbdId, 'VBD'))
  vbds.forEach(notAttached)
  for (const vbd of vbds) {
    if (!vbd.is_cd_drive) {
      removeVbd(plan, vbd.id)
      continue
    }
    delete plan.edit(vbd.id, 'VBD').VDI
    removeFromList(plan.edit(id, 'VDI', 'VDI-snapshot').$VBDs, vbd.id)
  }
  if (disk.type === 'VDI') {
    for (const snapshotId of [...disk.snapshots]) delete plan.edit(snapshotId, 'VDI-snapshot').$snapshot_of
  } else if (disk.$snapshot_of !== undefined && plan.find(disk.$snapshot_of)?.type === 'VDI') {
    removeFromList(plan.edit(disk.$snapshot_of, 'VDI').snapshots, disk.id)
  }
  accountDisk(plan, disk, -1)
  plan.remove(id, 'VDI', 'VDI-snapshot')
  forgetMessages(plan, [disk.uuid])
}

/** A VM snapshot with its drives, VIFs and the disk snapshots only it uses. */
export function removeVmSnapshot(plan: Plan, id: string): void {
  const snapshot = plan.get(id, 'VM-snapshot')
  for (const vbdId of [...snapshot.$VBDs]) {
    const diskId = plan.get(vbdId, 'VBD').VDI
    removeVbd(plan, vbdId)
    const disk = diskId === undefined ? undefined : plan.get(diskId, 'VDI', 'VDI-snapshot')
    if (disk?.type === 'VDI-snapshot' && disk.$VBDs.length === 0) removeDisk(plan, disk.id)
  }
  for (const vifId of [...snapshot.VIFs]) removeVif(plan, vifId)
  // What derived from this snapshot now derives from its parent.
  const relink = (record: { parent?: string }): void => {
    if (record.parent !== id) return
    if (snapshot.parent === undefined) delete record.parent
    else record.parent = snapshot.parent
  }
  if (plan.find(snapshot.$snapshot_of)?.type === 'VM') {
    const vm = plan.edit(snapshot.$snapshot_of, 'VM')
    removeFromList(vm.snapshots, id)
    relink(vm)
    for (const siblingId of [...vm.snapshots]) relink(plan.edit(siblingId, 'VM-snapshot'))
  }
  plan.remove(id, 'VM-snapshot')
  forgetMessages(plan, [snapshot.uuid])
}

/**
 * A halted VM with its snapshots, drives, VIFs, and the disks no other VM
 * uses (ISO images excepted).
 */
export function removeVm(plan: Plan, id: string): void {
  const vm = plan.get(id, 'VM')
  requirePowerState(vm, ['Halted'])
  for (const snapshotId of [...vm.snapshots]) removeVmSnapshot(plan, snapshotId)
  for (const vbdId of [...vm.$VBDs]) {
    const diskId = plan.get(vbdId, 'VBD').VDI
    removeVbd(plan, vbdId)
    if (diskId === undefined) continue
    const disk = plan.get(diskId, 'VDI', 'VDI-snapshot')
    if (disk.type === 'VDI' && disk.$VBDs.length === 0 && plan.get(disk.$SR, 'SR').content_type !== 'iso') removeDisk(plan, diskId)
  }
  for (const vifId of [...vm.VIFs]) removeVif(plan, vifId)
  plan.remove(id, 'VM')
  forgetMessages(plan, [vm.uuid])
}

/**
 * A custom template with its drives, VIFs and the disks no other VM uses; the
 * default templates ship with the hypervisor and XAPI refuses to destroy them.
 */
export function removeTemplate(plan: Plan, id: string): void {
  const template = plan.get(id, 'VM-template')
  if (template.isDefaultTemplate) throw incorrectState({ actual: true, expected: false, object: id, property: 'isDefaultTemplate' })
  for (const vbdId of [...template.$VBDs]) {
    const diskId = plan.get(vbdId, 'VBD').VDI
    removeVbd(plan, vbdId)
    if (diskId === undefined) continue
    const disk = plan.get(diskId, 'VDI', 'VDI-snapshot')
    if (disk.type === 'VDI' && disk.$VBDs.length === 0 && plan.get(disk.$SR, 'SR').content_type !== 'iso') removeDisk(plan, diskId)
  }
  for (const vifId of [...template.VIFs]) removeVif(plan, vifId)
  plan.remove(id, 'VM-template')
  forgetMessages(plan, [template.uuid])
}

/**
 * A network nobody is using: not the hosts' management network, and no VIF
 * plugged in. Unplugged VIFs (of halted VMs and snapshots) and the hosts'
 * PIFs on it go with it.
 */
export function removeNetwork(plan: Plan, id: string): void {
  const network = plan.get(id, 'network')
  const pifs = network.PIFs.map((pifId) => plan.get(pifId, 'PIF'))
  for (const pif of pifs) {
    if (pif.management) throw incorrectState({ actual: true, expected: false, object: pif.id, property: 'management' })
  }
  network.VIFs.map((vifId) => plan.get(vifId, 'VIF')).forEach(notAttached)
  for (const vifId of [...network.VIFs]) removeVif(plan, vifId)
  for (const pif of pifs) {
    const host = plan.edit(pif.$host, 'host')
    removeFromList(host.PIFs, pif.id)
    removeFromList(host.$PIFs, pif.id)
    plan.remove(pif.id, 'PIF')
  }
  plan.remove(id, 'network')
  forgetMessages(plan, [network.uuid])
}
