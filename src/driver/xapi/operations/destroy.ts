import type { OperationContext } from '../../types.js'
import type { XapiPool } from '../types.js'
import { isGone, step, type Env, type Target, type XapiFields } from './context.js'

/** `env` for the destroyers that check the index first. */
export type XapiDestroyer = (target: Target, context: OperationContext, env: Env) => Promise<void>

/** Runs a XAPI exchange on an object that may already be gone (XAPI, or the lab behind a simulator, took it along). */
async function unlessGone(run: () => Promise<unknown>): Promise<void> {
  try {
    await run()
  } catch (error) {
    if (!isGone(error)) throw error
  }
}

/** The disks a VM's drives hold (not its CD drives), read before the VM goes: its VBDs go with it. */
async function disksOf(pool: XapiPool, vm: XapiFields): Promise<string[]> {
  const vbds = Array.isArray(vm['VBDs']) ? vm['VBDs'].map(String) : []
  const disks: string[] = []
  for (const vbd of vbds) {
    const record = await pool.call<XapiFields>('VBD.get_record', [vbd])
    if (record['type'] === 'Disk' && record['VDI'] !== 'OpaqueRef:NULL') disks.push(String(record['VDI']))
  }
  return disks
}

/** A disk no VM uses any more, unless it is an ISO image (the lab keeps those too). */
async function destroyUnusedDisk(pool: XapiPool, vdi: string): Promise<void> {
  await unlessGone(async () => {
    const record = await pool.call<XapiFields>('VDI.get_record', [vdi])
    if (Array.isArray(record['VBDs']) && record['VBDs'].length > 0) return
    if ((await pool.call<string>('SR.get_content_type', [String(record['SR'])])) === 'iso') return
    await pool.callAsync('VDI.destroy', [vdi])
  })
}

/**
 * A VM or snapshot as the reference destroys one (@xen-orchestra/xapi
 * vm.mjs): a VM not halted is powered off first, then the VM goes, then its
 * snapshots, then the disks it held that no other VM uses. XAPI's VM.destroy
 * leaves disks and snapshots behind; a lab behind the simulator takes them
 * along, which the steps after it tolerate.
 */
async function destroyVm(pool: XapiPool, ref: string, context: OperationContext): Promise<void> {
  const record = await pool.call<XapiFields>('VM.get_record', [ref])
  const disks = await disksOf(pool, record)
  if (record['power_state'] !== 'Halted' && record['is_a_snapshot'] !== true) await pool.callAsync('VM.hard_shutdown', [ref], step(context, 0, 40))
  await pool.callAsync('VM.destroy', [ref], step(context, 40, 60))
  const snapshots = Array.isArray(record['snapshots']) ? record['snapshots'].map(String) : []
  for (const snapshot of snapshots) await unlessGone(() => destroyVm(pool, snapshot, { ...context, progress: () => {} }))
  for (const [i, disk] of disks.entries()) {
    await destroyUnusedDisk(pool, disk)
    context.progress(60 + (40 * (i + 1)) / disks.length)
  }
}

const vm: XapiDestroyer = ({ pool, ref }, context) => destroyVm(pool, ref, context)

const vdi: XapiDestroyer = async ({ pool, ref }, context) => {
  await pool.callAsync('VDI.destroy', [ref], step(context))
}

/** As XAPI destroys a network: refused while a VIF on it is plugged or a PIF is on it; its unplugged VIFs go with it. */
const network: XapiDestroyer = async ({ pool, ref }, context) => {
  await pool.callAsync('network.destroy', [ref], step(context))
}

export const destroyersByType: Readonly<Record<string, XapiDestroyer>> = {
  VM: vm,
  'VM-snapshot': vm,
  VDI: vdi,
  'VDI-snapshot': vdi,
  network,
}
