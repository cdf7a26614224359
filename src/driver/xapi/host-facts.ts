import { noSuchObject } from '../../errors.js'
import type { HostFacts, HostLogFile, MissingPatch, XoRecord } from '../types.js'
import { translated } from './errors.js'
import type { XapiLocator } from './types.js'

/**
 * What a host of a XAPI pool tells about itself. Its missing updates come
 * from XCP-ng's updater plugin, as the reference lists them (xo-server's
 * `_listXcpUpdates`: `updater.py` `check_update`, a JSON list in the shape
 * of MissingPatch); the rest is still made from the records, as the lab
 * makes it (`fallback`).
 */
export class XapiHostFacts implements HostFacts {
  readonly #locator: XapiLocator
  readonly #fallback: HostFacts

  constructor(locator: XapiLocator, fallback: HostFacts) {
    this.#locator = locator
    this.#fallback = fallback
  }

  async missingPatches(host: XoRecord): Promise<readonly MissingPatch[]> {
    return listMissingPatches(this.#locator, host)
  }

  smtEnabled(host: XoRecord): Promise<boolean> {
    return this.#fallback.smtEnabled(host)
  }

  auditLog(host: XoRecord): Promise<string> {
    return this.#fallback.auditLog(host)
  }

  logFiles(host: XoRecord): Promise<readonly HostLogFile[]> {
    return this.#fallback.logFiles(host)
  }
}

/** The updates a host lacks, from its updater plugin (a running host: a halted one does not answer). */
export async function listMissingPatches(locator: XapiLocator, host: XoRecord, signal?: AbortSignal): Promise<readonly MissingPatch[]> {
  const location = locator.locate(host)
  if (location === undefined) throw noSuchObject(host.id, host.type)
  const answer = await translated({ object: host }, () =>
    location.pool.call<string>('host.call_plugin', [location.ref, 'updater.py', 'check_update', {}], signal === undefined ? {} : { signal }),
  )
  const patches: unknown = JSON.parse(answer)
  return Array.isArray(patches) ? (patches as MissingPatch[]) : []
}
