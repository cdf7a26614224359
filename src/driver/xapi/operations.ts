import { noSuchObject } from '../../errors.js'
import { labCapabilities } from '../lab/capabilities.js'
import type { DriverCapabilities, DriverOperations, WaitForOptions, XoRecord } from '../types.js'
import type { XapiLocator } from './types.js'

/** Placeholder until the operations module lands (issue 28): the actions the lab declares on VMs, hosts, SRs and VDIs. */
export const xapiCapabilities: DriverCapabilities = Object.freeze({
  actions: Object.fromEntries(Object.entries(labCapabilities.actions).filter(([type]) => ['VM', 'host', 'SR', 'VDI'].includes(type))),
  patch: labCapabilities.patch,
  destroy: labCapabilities.destroy,
  tags: labCapabilities.tags,
})

export interface XapiIndex {
  getObject(id: string): XoRecord | undefined
  waitFor(id: string, options?: WaitForOptions): Promise<XoRecord>
}

const unknown = (object: XoRecord): Promise<never> => Promise.reject(noSuchObject(object.id, object.type))

/** Placeholder until the operations module lands (issue 28): every object is unknown to it. */
export class XapiOperations implements DriverOperations {
  constructor(
    readonly locator: XapiLocator,
    readonly index: XapiIndex,
  ) {}

  readonly perform: DriverOperations['perform'] = unknown
  readonly update: DriverOperations['update'] = unknown
  readonly destroy: DriverOperations['destroy'] = unknown
  readonly setTag: DriverOperations['setTag'] = unknown
}
