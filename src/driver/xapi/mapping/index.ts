import type { Fields, MappingContext, XapiObject } from './context.js'
import { gpuGroupRecord } from './gpu.js'
import { hostRecord, poolRecord } from './host.js'
import { messageRecord } from './message.js'
import { networkRecord, pifRecord, vifRecord } from './network.js'
import { pbdRecord, smRecord, srRecord, vbdRecord, vdiRecord } from './storage.js'
import { vmRecord } from './vm.js'

export type { Fields, MappingContext, XapiObject, XapiRecord } from './context.js'
export { vmId } from './vm.js'

type Mapper = (object: XapiObject, context: MappingContext) => Fields

/** The XAPI classes that are XO records, and how each is read (xo-server's xapi-object-to-xo, shared notes on xapi §2.6). */
const MAPPERS: Readonly<Record<string, Mapper>> = {
  pool: poolRecord,
  host: hostRecord,
  VM: vmRecord,
  SR: srRecord,
  VDI: vdiRecord,
  VBD: vbdRecord,
  PBD: pbdRecord,
  SM: smRecord,
  network: networkRecord,
  PIF: pifRecord,
  VIF: vifRecord,
  message: messageRecord,
  GPU_group: gpuGroupRecord,
}

/** The classes an index fetches and follows: the mapped ones and those folded into them. */
export const WATCHED_CLASSES = ['pool', 'host', 'host_metrics', 'VM', 'VM_metrics', 'VM_guest_metrics', 'SR', 'PBD', 'VDI', 'VBD', 'SM', 'network', 'PIF', 'Bond', 'VIF', 'message', 'GPU_group'] as const

/** The XO record of a XAPI object, undefined for a class XO folds into another (metrics). */
export function xoRecord(object: XapiObject, context: MappingContext): Fields | undefined {
  return Object.hasOwn(MAPPERS, object.cls) ? MAPPERS[object.cls]?.(object, context) : undefined
}
