import type { XoRecord } from '../types.js'
import type { XapiIndex } from './operations/context.js'

/**
 * Where a transfer of an SR's disks is sent: the address of the host that
 * holds a local SR (its PBD's host, the record's `$container`), as XO's
 * clients do, because a member's redirect after an upload's body started
 * cannot be followed. Undefined for a shared SR, the master's own local SR
 * or a host without an address: the connection's origin (the master)
 * serves those, under the name its certificate was checked for.
 */
export function srHostAddress(index: XapiIndex, sr: XoRecord | undefined): string | undefined {
  const host = typeof sr?.['$container'] === 'string' ? index.getObject(sr['$container']) : undefined
  if (host?.type !== 'host') return undefined
  const pool = typeof host['$pool'] === 'string' ? index.getObject(host['$pool']) : undefined
  if (pool?.['master'] === host.id) return undefined
  const address = host['address']
  return typeof address === 'string' && address !== '' ? address : undefined
}

/** The host address (srHostAddress) for a VDI's content: its SR's. */
export function vdiHostAddress(index: XapiIndex, vdi: XoRecord): string | undefined {
  return srHostAddress(index, typeof vdi['$SR'] === 'string' ? index.getObject(vdi['$SR']) : undefined)
}
