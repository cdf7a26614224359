import { incorrectState } from '../../../errors.js'
import type { Plan } from './plan.js'

/**
 * A disk on this SR can be used on the host only through a plugged PBD (XAPI
 * answers SR_HAS_NO_PBDS, or that the PBD is unplugged, otherwise): the 409
 * names the PBD, or the SR when it has none for that host.
 */
export function requireReachable(plan: Plan, srId: string, hostId: string | undefined): void {
  const sr = plan.get(srId, 'SR')
  const pbds = sr.$PBDs.map((id) => plan.get(id, 'PBD'))
  const candidates = hostId === undefined ? pbds : pbds.filter((pbd) => pbd.host === hostId)
  if (candidates.some((pbd) => pbd.attached)) return
  const pbd = candidates[0]
  throw incorrectState({ actual: false, expected: true, object: pbd?.id ?? sr.id, property: pbd === undefined ? '$PBDs' : 'attached' })
}

/** Every SR of a VM's disks and CDs must be plugged on the host it runs on. */
export function requireDisksReachable(plan: Plan, vbdIds: readonly string[], hostId: string): void {
  const vdis = vbdIds.flatMap((id) => plan.get(id, 'VBD').VDI ?? [])
  const srs = new Set(vdis.map((id) => plan.get(id, 'VDI', 'VDI-snapshot').$SR))
  for (const sr of srs) requireReachable(plan, sr, hostId)
}
