import type { XoRecord } from '../../driver/types.js'
import { common, refs, str, stringMap, strings, type RecordContext, type XapiObject } from './context.js'

/** A pool's GPU group (XAPI keeps one even without GPUs). */
export function gpuGroupObject(group: XoRecord, context: RecordContext): XapiObject {
  const { uuid, ref } = common(group)
  return {
    cls: 'GPU_group',
    ref,
    uuid,
    fields: {
      uuid,
      name_label: str(group, 'name_label'),
      name_description: str(group, 'name_description'),
      PGPUs: refs(context, group['pgpus']),
      VGPUs: refs(context, group['vgpus']),
      GPU_types: strings(group['gpuTypes']),
      other_config: stringMap(group['otherConfig']),
      allocation_algorithm: str(group, 'allocation', 'depth_first'),
      supported_VGPU_types: refs(context, group['supportedVgpuTypes']),
      enabled_VGPU_types: refs(context, group['enabledVgpuTypes']),
    },
  }
}
