import { base, ids, list, map, text, type Fields, type MappingContext, type XapiObject } from './context.js'

/** xo-server's gpu_group: a pool's group of identical GPUs, where vGPUs are placed. */
export function gpuGroupRecord({ ref, record: r }: XapiObject, context: MappingContext): Fields {
  const uuid = text(r['uuid'])
  return {
    ...base('gpuGroup', uuid, uuid, ref, context.poolId),
    allocation: text(r['allocation_algorithm']),
    enabledVgpuTypes: ids(context, r['enabled_VGPU_types']),
    gpuTypes: list(r['GPU_types']),
    name_description: text(r['name_description']),
    name_label: text(r['name_label']),
    otherConfig: map(r['other_config']),
    pgpus: ids(context, r['PGPUs']),
    supportedVgpuTypes: ids(context, r['supported_VGPU_types']),
    vgpus: ids(context, r['VGPUs']),
  }
}
