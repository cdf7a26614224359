import type { XoRecord } from '../../driver/types.js'
import { common, seconds, str, type RecordContext, type XapiObject } from './context.js'
import { gpuGroupObject } from './gpu.js'
import { hostObjects, poolObject } from './host.js'
import { networkObject, pifObjects, vifObject } from './network.js'
import { pbdObject, smObject, srObject, vbdObject, vdiObject } from './storage.js'
import { vmObjects } from './vm.js'

export type { PartialRecord, RecordContext, XapiObject } from './context.js'

function messageObject(message: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(message)
  const target = context.object(message['$object'])
  const cls = target === undefined ? 'Pool' : target.type.startsWith('VM') ? 'VM' : target.type === 'host' ? 'Host' : target.type === 'SR' ? 'SR' : target.type === 'VDI' ? 'VDI' : 'Pool'
  return {
    cls: 'message',
    ref,
    uuid,
    fields: { uuid, name: str(message, 'name'), priority: 3, cls, obj_uuid: target === undefined ? '' : str(target, 'uuid', target.id), timestamp: seconds(message['time']), body: str(message, 'body') },
  }
}

/** The XAPI objects a lab record stands for (none for lab types XAPI has no class for). */
export function xapiObjects(record: XoRecord, context: RecordContext): XapiObject[] {
  switch (record.type) {
    case 'pool':
      return [poolObject(record, context)]
    case 'host':
      return hostObjects(record, context)
    case 'VM':
    case 'VM-controller':
    case 'VM-snapshot':
    case 'VM-template':
      return vmObjects(record, context)
    case 'SR':
      return [srObject(record, context)]
    case 'VDI':
    case 'VDI-snapshot':
      return [vdiObject(record, context)]
    case 'VBD':
      return [vbdObject(record, context)]
    case 'PBD':
      return [pbdObject(record, context)]
    case 'SM':
      return [smObject(record)]
    case 'network':
      return [networkObject(record, context)]
    case 'PIF':
      return pifObjects(record, context)
    case 'VIF':
      return [vifObject(record, context)]
    case 'message':
      return [messageObject(record, context)]
    case 'gpuGroup':
      return [gpuGroupObject(record, context)]
    default:
      return []
  }
}

/** Every lab type that has XAPI objects, in the order a full load walks them. */
export const MAPPED_TYPES = ['pool', 'host', 'SM', 'SR', 'PBD', 'network', 'PIF', 'VM-controller', 'VM-template', 'VM', 'VM-snapshot', 'VDI', 'VDI-snapshot', 'VBD', 'VIF', 'message', 'gpuGroup'] as const
