import { NULL_REF, versionStruct, vmRecord } from './vm-record.js'
import { decodeXmlRpc, encodeXmlRpc, XmlRpcDouble, type XmlRpcStruct, type XmlRpcValue } from './xml-rpc.js'

/** What an XVA says about one disk of the VM. */
export interface XvaDisk {
  readonly uuid: string
  readonly name_label: string
  readonly name_description: string
  /** bytes; the chunks cover exactly this many */
  readonly virtual_size: number
  readonly device: string
  readonly userdevice: string
  readonly bootable: boolean
  readonly mode: 'RW' | 'RO'
}

export interface XvaVif {
  readonly uuid: string
  readonly device: string
  readonly MAC: string
  readonly MTU: number
  readonly network_name_label: string
}

/** The VM fields Keel carries through an XVA; everything else takes the known-good defaults. */
export interface XvaVm {
  readonly uuid: string
  readonly name_label: string
  readonly name_description: string
  readonly memory_static_max: number
  readonly memory_dynamic_max: number
  readonly memory_dynamic_min: number
  readonly memory_static_min: number
  readonly VCPUs_max: number
  readonly VCPUs_at_startup: number
  readonly is_a_template: boolean
  readonly tags: readonly string[]
  readonly other_config: Readonly<Record<string, string>>
}

export interface XvaDescription {
  readonly vm: XvaVm
  /** in streaming order */
  readonly disks: readonly XvaDisk[]
  readonly vifs: readonly XvaVif[]
}

/** A disk as named inside the archive: chunk members are `<ref>/<NNNNNNNN>`. */
export interface XvaDiskEntry extends XvaDisk {
  readonly ref: string
}

export interface ParsedOvaXml {
  readonly description: XvaDescription
  /** streamed disks sorted by ref string, the order XAPI reads them */
  readonly entries: readonly XvaDiskEntry[]
}


/** Export ids padded to 3 digits so string order (what XAPI sorts by) is numeric order. */
const ref = (n: number): string => `Ref:${String(n).padStart(3, '0')}`

/**
 * Builds ova.xml for a VM (notes 2.5). Returns the document and the refs its
 * disks stream under, in the same order as `description.disks`.
 */
export function buildOvaXml(description: XvaDescription, now = new Date()): { xml: string; diskRefs: string[] } {
  let next = 0
  const vmRef = ref(next++)
  const srRef = ref(next++)
  const networkRefs = new Map<string, string>()
  for (const vif of description.vifs) if (!networkRefs.has(vif.network_name_label)) networkRefs.set(vif.network_name_label, ref(next++))
  const disks = description.disks.map((disk) => ({ disk, vdiRef: ref(next++), vbdRef: ref(next++) }))
  const vifs = description.vifs.map((vif) => ({ vif, vifRef: ref(next++) }))
  const objects: XmlRpcValue[] = [
    {
      class: 'VM',
      id: vmRef,
      snapshot: vmRecord(
        description.vm,
        disks.map((d) => d.vbdRef),
        vifs.map((v) => v.vifRef),
      ),
    },
    {
      class: 'SR',
      id: srRef,
      snapshot: {
        uuid: '00000000-0000-4000-8000-000000000000',
        name_label: 'export',
        name_description: '',
        virtual_allocation: 0,
        physical_utilisation: 0,
        physical_size: 0,
        type: 'ext',
        content_type: 'user',
        shared: false,
        other_config: {},
        VDIs: disks.map((d) => d.vdiRef),
      },
    },
    ...[...networkRefs].map(([name, networkRef]): XmlRpcStruct => ({
      class: 'network',
      id: networkRef,
      snapshot: { uuid: '', name_label: name, name_description: '', bridge: '', MTU: 1500, other_config: {}, VIFs: vifs.filter((v) => v.vif.network_name_label === name).map((v) => v.vifRef) },
    })),
    ...disks.flatMap(({ disk, vdiRef, vbdRef }): XmlRpcStruct[] => [
      {
        class: 'VDI',
        id: vdiRef,
        snapshot: {
          uuid: disk.uuid,
          name_label: disk.name_label,
          name_description: disk.name_description,
          SR: srRef,
          VBDs: [vbdRef],
          virtual_size: disk.virtual_size,
          physical_utilisation: disk.virtual_size,
          type: 'user',
          sharable: false,
          read_only: disk.mode === 'RO',
          other_config: {},
          storage_lock: false,
          managed: true,
          missing: false,
          parent: NULL_REF,
          xenstore_data: {},
          sm_config: {},
        },
      },
      {
        class: 'VBD',
        id: vbdRef,
        snapshot: {
          uuid: '',
          VM: vmRef,
          VDI: vdiRef,
          device: disk.device,
          userdevice: disk.userdevice,
          bootable: disk.bootable,
          mode: disk.mode,
          type: 'Disk',
          unpluggable: false,
          storage_lock: false,
          empty: false,
          other_config: {},
          currently_attached: false,
          status_code: 0,
          status_detail: '',
          runtime_properties: {},
          qos_algorithm_type: '',
          qos_algorithm_params: {},
          qos_supported_algorithms: [],
          metrics: NULL_REF,
        },
      },
    ]),
    ...vifs.map(({ vif, vifRef }): XmlRpcStruct => ({
      class: 'VIF',
      id: vifRef,
      snapshot: {
        uuid: vif.uuid,
        device: vif.device,
        MAC: vif.MAC,
        MTU: vif.MTU,
        network: networkRefs.get(vif.network_name_label) ?? NULL_REF,
        VM: vmRef,
        other_config: {},
        qos_algorithm_type: '',
        qos_algorithm_params: {},
        currently_attached: false,
        MAC_autogenerated: false,
        locking_mode: 'network_default',
        ipv4_allowed: [],
        ipv6_allowed: [],
      },
    })),
  ]
  return { xml: encodeXmlRpc({ version: versionStruct(now), objects }), diskRefs: disks.map((d) => d.vdiRef) }
}

function struct(value: XmlRpcValue | undefined, what: string): XmlRpcStruct {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Date || value instanceof XmlRpcDouble) {
    throw new Error(`${what} is not a struct`)
  }
  return value
}

function text(record: XmlRpcStruct, field: string, fallback?: string): string {
  const value = record[field]
  if (typeof value === 'string') return value
  if (value === undefined && fallback !== undefined) return fallback
  throw new Error(`field ${field} is missing or not a string`)
}

function integer(record: XmlRpcStruct, field: string, fallback?: number): number {
  const value = record[field]
  if (value === undefined && fallback !== undefined) return fallback
  const number = typeof value === 'string' ? Number(value) : value instanceof XmlRpcDouble ? value.value : Number.NaN
  if (!Number.isSafeInteger(number) || number < 0) throw new Error(`field ${field} is not a non-negative integer`)
  return number
}

function bool(record: XmlRpcStruct, field: string): boolean {
  return record[field] === true
}

function strings(value: XmlRpcValue | undefined): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
}

/**
 * Reads ova.xml into a typed description; throws a plain Error naming the
 * problem (the XVA reader turns it into INVALID_DISK_STREAM with the offset).
 */
export function parseOvaXml(xml: string): ParsedOvaXml {
  const root = struct(decodeXmlRpc(xml), 'ova.xml')
  const objects = root['objects']
  if (!Array.isArray(objects)) throw new Error('ova.xml has no objects array')
  const byRef = new Map<string, { class: string; snapshot: XmlRpcStruct }>()
  for (const object of objects) {
    const record = struct(object, 'object')
    byRef.set(text(record, 'id'), { class: text(record, 'class'), snapshot: struct(record['snapshot'], 'snapshot') })
  }
  const vms = [...byRef].filter(([, o]) => o.class === 'VM' && o.snapshot['is_control_domain'] !== true)
  const [vmEntry] = vms
  if (vmEntry === undefined) throw new Error('ova.xml has no VM')
  const vm = vmEntry[1].snapshot
  const entries: XvaDiskEntry[] = []
  const vifs: XvaVif[] = []
  for (const vbdRef of strings(vm['VBDs'])) {
    const vbd = byRef.get(vbdRef)
    if (vbd?.class !== 'VBD' || text(vbd.snapshot, 'type', 'Disk') === 'CD') continue
    const vdiRef = text(vbd.snapshot, 'VDI')
    const vdi = byRef.get(vdiRef)
    if (vdi?.class !== 'VDI') continue
    const sr = byRef.get(text(vdi.snapshot, 'SR', NULL_REF))
    if (sr !== undefined && sr.snapshot['content_type'] === 'iso') continue
    entries.push({
      ref: vdiRef,
      uuid: text(vdi.snapshot, 'uuid', ''),
      name_label: text(vdi.snapshot, 'name_label', ''),
      name_description: text(vdi.snapshot, 'name_description', ''),
      virtual_size: integer(vdi.snapshot, 'virtual_size'),
      device: text(vbd.snapshot, 'device', ''),
      userdevice: text(vbd.snapshot, 'userdevice', ''),
      bootable: bool(vbd.snapshot, 'bootable'),
      mode: text(vbd.snapshot, 'mode', 'RW') === 'RO' ? 'RO' : 'RW',
    })
  }
  for (const vifRef of strings(vm['VIFs'])) {
    const vif = byRef.get(vifRef)
    if (vif?.class !== 'VIF') continue
    const network = byRef.get(text(vif.snapshot, 'network', NULL_REF))
    vifs.push({
      uuid: text(vif.snapshot, 'uuid', ''),
      device: text(vif.snapshot, 'device', ''),
      MAC: text(vif.snapshot, 'MAC', ''),
      MTU: integer(vif.snapshot, 'MTU', 1500),
      network_name_label: network === undefined ? '' : text(network.snapshot, 'name_label', ''),
    })
  }
  entries.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0))
  const otherConfig = vm['other_config']
  const description: XvaDescription = {
    vm: {
      uuid: text(vm, 'uuid', ''),
      name_label: text(vm, 'name_label', ''),
      name_description: text(vm, 'name_description', ''),
      memory_static_max: integer(vm, 'memory_static_max', 0),
      memory_dynamic_max: integer(vm, 'memory_dynamic_max', 0),
      memory_dynamic_min: integer(vm, 'memory_dynamic_min', 0),
      memory_static_min: integer(vm, 'memory_static_min', 0),
      VCPUs_max: integer(vm, 'VCPUs_max', 1),
      VCPUs_at_startup: integer(vm, 'VCPUs_at_startup', 1),
      is_a_template: bool(vm, 'is_a_template'),
      tags: strings(vm['tags']),
      other_config: Object.fromEntries(
        Object.entries(otherConfig === undefined ? {} : struct(otherConfig, 'other_config')).filter((e): e is [string, string] => typeof e[1] === 'string'),
      ),
    },
    disks: entries.map(({ ref: _ref, ...disk }) => disk),
    vifs,
  }
  return { description, entries }
}
