import { randomUUID } from 'node:crypto'
import { incorrectState, invalidParameters, type KeelError } from '../../../errors.js'
import type { VdiRecord } from '../../../model/records.js'
import { GiB } from '../units.js'
import { identity } from './builders.js'
import { diskIds, haltedContainer, localHosts } from './guest.js'
import { forgetMessages } from './removal.js'
import { requiredString, type ActionHandler } from './params.js'
import type { Plan } from './plan.js'
import { preview, Run } from './run.js'
import { accountDisk, freeSpace, isThick } from './sr-usage.js'
import { requireReachable } from './sr-reach.js'

/**
 * SR maintenance and disk moves. The lab keeps each SR's figures equal to
 * the sums over its disks at every step, so a scan or a reclaim finds them
 * right; they recompute them all the same, which repairs a lab edited by hand.
 */

const disksOn = (plan: Plan, srId: string) =>
  [...plan.all('VDI'), ...plan.all('VDI-snapshot')].filter((disk) => disk.$SR === srId)

function scan(plan: Plan, srId: string): void {
  const disks = disksOn(plan, srId)
  const sr = plan.edit(srId, 'SR')
  const found = new Set(disks.map((disk) => disk.id))
  // Listed disks keep their place, so that a scan that finds nothing new changes nothing.
  const kept = sr.VDIs.filter((id) => found.has(id))
  sr.VDIs = [...kept, ...[...found].filter((id) => !kept.includes(id))]
  sr.usage = disks.reduce((sum, disk) => sum + disk.size, 0)
}

function reclaimSpace(plan: Plan, srId: string): void {
  const sr = plan.edit(srId, 'SR')
  if (sr.content_type === 'iso') {
    throw incorrectState({ actual: sr.content_type, expected: 'user', object: sr.id, property: 'content_type' })
  }
  sr.physical_usage = disksOn(plan, srId).reduce((sum, disk) => sum + disk.usage, 0)
}

/** Steps for a disk move: a copy takes time with the disk's size, up to a limit. */
const migrateWaits = (size: number): number => 2 + Math.min(8, Math.ceil(size / (100 * GiB)))

/**
 * Moves a disk to another SR of its pool. The copy gets a new id, as in
 * XAPI; the VMs' drives follow it, its snapshots stay where they are but now
 * belong to the copy. Returns the new id.
 */
function migrateVdi(plan: Plan, vdiId: string, srId: string, copyId?: string): string {
  const vdi = plan.get(vdiId, 'VDI')
  const from = plan.get(vdi.$SR, 'SR')
  const to = plan.get(srId, 'SR')
  const problem = (message: string): KeelError => invalidParameters([{ path: 'body.srId', message }])
  if (from.content_type === 'iso') {
    throw incorrectState({ actual: from.content_type, expected: 'user', object: from.id, property: 'content_type' })
  }
  if (to.id === from.id) throw problem(`the disk is already on SR ${to.id}`)
  requireReachable(plan, from.id, undefined)
  requireReachable(plan, to.id, undefined)
  if (to.$pool !== vdi.$pool) throw problem(`SR ${to.id} is not in the disk's pool ${vdi.$pool}`)
  if (to.content_type === 'iso') throw problem(`SR ${to.id} is an ISO library`)
  const usage = isThick(to) ? vdi.size : vdi.usage
  if (freeSpace(to) < usage) throw problem(`SR ${to.id} has ${freeSpace(to)} bytes free, the disk needs ${usage}`)

  const users = vdi.$VBDs.map((id) => plan.get(plan.get(id, 'VBD').VM, 'VM', 'VM-snapshot', 'VM-template'))
  for (const vm of users) {
    // After the move, every disk of the VM must still be reachable from one host.
    const srs = diskIds(plan, vm).map((id) => (id === vdi.id ? to.id : plan.get(id, 'VDI', 'VDI-snapshot').$SR))
    const hosts = localHosts(plan, srs)
    if (vm.power_state !== 'Halted') hosts.add(vm.$container)
    if (hosts.size > 1) throw problem(`VM ${vm.id} could not reach the disk on SR ${to.id}`)
  }

  const copy = plan.add<VdiRecord>({
    ...(structuredClone(vdi) as VdiRecord),
    ...identity(to.$pool, copyId),
    usage,
    chainPhysicalUsage: usage,
    $SR: to.id,
    current_operations: {},
  })
  accountDisk(plan, vdi, -1)
  accountDisk(plan, copy, 1)
  for (const id of vdi.$VBDs) plan.edit(id, 'VBD').VDI = copy.id
  for (const id of vdi.snapshots) plan.edit(id, 'VDI-snapshot').$snapshot_of = copy.id
  plan.remove(vdi.id, 'VDI')
  forgetMessages(plan, [vdi.uuid])
  for (const vm of users) {
    if (vm.power_state === 'Halted') plan.edit(vm.id, 'VM', 'VM-snapshot', 'VM-template').$container = haltedContainer(plan, vm)
  }
  return copy.id
}

const srStep =
  (waits: number, change: (plan: Plan, srId: string) => void): ActionHandler =>
  async (op, object) => {
    preview(op.env, (plan) => change(plan, object.id))
    const run = new Run(op, waits + 1)
    await run.wait(waits)
    await run.apply((plan) => change(plan, object.id))
    return undefined
  }

export const srActions: Readonly<Record<string, ActionHandler>> = {
  scan: srStep(2, scan),
  // Then merges what deleted snapshots left in the SR's chains and measures its files.
  reclaim_space: async (op, object, params) => {
    await srStep(3, reclaimSpace)(op, object, params)
    await op.env.disks?.tidy(object.id)
    return undefined
  },
}

export const vdiActions: Readonly<Record<string, ActionHandler>> = {
  migrate: async (op, object, params) => {
    const srId = requiredString(params, 'srId')
    const size = preview(op.env, (plan) => {
      const { size } = plan.get(object.id, 'VDI')
      migrateVdi(plan, object.id, srId)
      return size
    })
    const waits = migrateWaits(size)
    const run = new Run(op, waits + 1)
    await run.wait(waits)
    // The content is copied first, under the copy's id: the moved disk never shows without its bytes.
    const copyId = randomUUID()
    const disks = op.env.disks
    if (disks === undefined) return { id: await run.apply((plan) => migrateVdi(plan, object.id, srId, copyId)), type: 'VDI' }
    const source = preview(op.env, (plan) => plan.get(object.id, 'VDI'))
    await disks.copy({ id: source.id, sr: source.$SR }, { id: copyId, sr: srId }, source.size)
    try {
      return { id: await run.apply((plan) => migrateVdi(plan, object.id, srId, copyId)), type: 'VDI' }
    } catch (error) {
      await disks.remove({ id: copyId, sr: srId })
      throw error
    }
  },
}
