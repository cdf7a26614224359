import { incorrectState } from '../../../errors.js'
import type { Env } from './context.js'

/**
 * The lab's rule, read on the index: a disk on an SR is used on a host only
 * through a plugged PBD (XAPI answers VM_REQUIRES_SR or SR_NO_PBDS
 * otherwise, which say less). The 409 names the PBD, or the SR when it has
 * none for that host.
 */

const links = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : [])

export function requireReachable(env: Env, srId: string, hostId: string | undefined): void {
  const pbds = links(env.index.getObject(srId)?.['$PBDs']).flatMap((id) => env.index.getObject(id) ?? [])
  const candidates = hostId === undefined ? pbds : pbds.filter((pbd) => pbd['host'] === hostId)
  if (candidates.some((pbd) => pbd['attached'] === true)) return
  const pbd = candidates[0]
  throw incorrectState({ actual: false, expected: true, object: pbd?.id ?? srId, property: pbd === undefined ? '$PBDs' : 'attached' })
}

/** Every SR of a VM's disks and CDs must be plugged on the host it is to run on. */
export function requireDisksReachable(env: Env, vmId: string, hostId: string): void {
  const vdis = links(env.index.getObject(vmId)?.['$VBDs']).flatMap((id) => {
    const vdi = env.index.getObject(id)?.['VDI']
    return typeof vdi === 'string' ? [vdi] : []
  })
  const srs = new Set(vdis.flatMap((id) => {
    const sr = env.index.getObject(id)?.['$SR']
    return typeof sr === 'string' ? [sr] : []
  }))
  for (const sr of srs) requireReachable(env, sr, hostId)
}
