import type { XapiDatabase, XapiRecord } from '../../src/simulator/database.js'
import { XmlRpcDouble, type XmlRpcValue } from '../../src/xapi/xml-rpc.js'

/**
 * XAPI records read back as XO records, by the reference's rules
 * (xo-server xapi-object-to-xo.mjs, shared notes on xapi §2.6), for the main
 * fields only: the test holds the result against the lab's own records.
 */
type Xo = Record<string, unknown>

const NULL = 'OpaqueRef:NULL'
const text = (value: XmlRpcValue | undefined): string => (typeof value === 'string' ? value : '')
const list = (value: XmlRpcValue | undefined): string[] => (Array.isArray(value) ? value.map(String) : [])
const map = (value: XmlRpcValue | undefined): Record<string, XmlRpcValue> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date) && !(value instanceof XmlRpcDouble) ? value : {}
const number = (value: XmlRpcValue | undefined): number => (typeof value === 'number' ? value : Number(value))
/** XO's parseDateTime: epoch 0 means unset. */
const timestamp = (value: XmlRpcValue | undefined): number | null => (value instanceof Date && value.getTime() !== 0 ? value.getTime() / 1000 : null)

export class XoMapper {
  constructor(private readonly db: XapiDatabase) {}

  #record(ref: XmlRpcValue | undefined): XapiRecord | undefined {
    return typeof ref === 'string' && ref !== NULL ? this.db.get(ref)?.record : undefined
  }

  /** XO's link(): a ref as the id of what it names (default templates get `<pool>-<uuid>`). */
  id(ref: XmlRpcValue | undefined): string | undefined {
    if (typeof ref !== 'string' || ref === NULL) return undefined
    const object = this.db.get(ref)
    if (object === undefined) return undefined
    if (object.cls === 'VM' && object.record['is_default_template'] === true) return `${this.#poolUuid()}-${object.uuid}`
    return object.uuid
  }

  ids(refs: XmlRpcValue | undefined): string[] {
    return list(refs).map((ref) => this.id(ref) ?? `missing ${ref}`)
  }

  #poolUuid(): string {
    for (const pool of this.db.ofClass('pool')) return pool.uuid
    return ''
  }

  /** `$container`: the resident host, else the host of a local SR holding one of the disks, else the pool. */
  #vmContainer(vm: XapiRecord): string {
    const resident = this.id(vm['resident_on'])
    if (resident !== undefined) return resident
    for (const vbd of list(vm['VBDs'])) {
      const sr = this.#record(this.#record(this.#record(vbd)?.['VDI'])?.['SR'])
      if (sr === undefined || sr['shared'] === true) continue
      const pbd = this.#record(list(sr['PBDs'])[0])
      const host = this.id(pbd?.['host'])
      if (host !== undefined) return host
    }
    return this.#poolUuid()
  }

  toXo(cls: string, r: XapiRecord): Xo {
    switch (cls) {
      case 'pool':
        return { name_label: r['name_label'], name_description: r['name_description'], master: this.id(r['master']), default_SR: this.id(r['default_SR']), tags: r['tags'], HA_enabled: r['ha_enabled'], zstdSupported: map(r['restrictions'])['restrict_zstd_export'] !== 'true', otherConfig: r['other_config'] }
      case 'host': {
        const metrics = this.#record(r['metrics']) ?? {}
        const total = number(metrics['memory_total'])
        const version = map(r['software_version'])
        const cpu = map(r['cpu_info'])
        return {
          name_label: r['name_label'], hostname: r['hostname'], address: r['address'], enabled: r['enabled'], power_state: metrics['live'] === true ? 'Running' : 'Halted',
          memory: { size: total, usage: total - number(metrics['memory_free']) }, residentVms: this.ids(r['resident_VMs']), PIFs: this.ids(r['PIFs']), $PBDs: this.ids(r['PBDs']),
          version: version['product_version'], productBrand: version['product_brand'], build: version['build_number'], controlDomain: this.id(r['control_domain']),
          license_params: r['license_params'], bios_strings: r['bios_strings'], tags: r['tags'], cpus: { cores: number(cpu['cpu_count']), sockets: number(cpu['socket_count']) },
        }
      }
      case 'VM': {
        const metrics = this.#record(r['metrics']) ?? {}
        const guest = this.#record(r['guest_metrics'])
        const type = r['is_a_snapshot'] === true ? 'VM-snapshot' : r['is_a_template'] === true ? 'VM-template' : r['is_control_domain'] === true ? 'VM-controller' : 'VM'
        return {
          type, name_label: r['name_label'], name_description: r['name_description'], power_state: r['power_state'], tags: r['tags'], other: r['other_config'],
          blockedOperations: r['blocked_operations'], high_availability: r['ha_restart_priority'], startDelay: r['start_delay'], virtualizationMode: r['domain_type'],
          CPUs: { max: r['VCPUs_max'], number: r['VCPUs_at_startup'] },
          memory: { static: [r['memory_static_min'], r['memory_static_max']], dynamic: [r['memory_dynamic_min'], r['memory_dynamic_max']] },
          $VBDs: this.ids(r['VBDs']), VIFs: this.ids(r['VIFs']), snapshots: this.ids(r['snapshots']), $container: this.#vmContainer(r),
          startTime: timestamp(metrics['start_time']), addresses: guest?.['networks'] ?? {}, ...(type === 'VM-snapshot' ? { $snapshot_of: this.id(r['snapshot_of']), snapshot_time: timestamp(r['snapshot_time']) } : {}),
        }
      }
      case 'SR': {
        const shared = r['shared'] === true
        return {
          name_label: r['name_label'], size: r['physical_size'], physical_usage: r['physical_utilisation'], usage: r['virtual_allocation'], SR_type: r['type'], content_type: r['content_type'],
          shared, VDIs: this.ids(r['VDIs']), $PBDs: this.ids(r['PBDs']), allocationStrategy: map(r['sm_config'])['allocation'], tags: r['tags'],
          $container: shared ? this.#poolUuid() : this.id(this.#record(list(r['PBDs'])[0])?.['host']),
        }
      }
      case 'VDI':
        return {
          type: r['is_a_snapshot'] === true ? 'VDI-snapshot' : 'VDI', name_label: r['name_label'], size: r['virtual_size'], usage: r['physical_utilisation'], $SR: this.id(r['SR']),
          $VBDs: this.ids(r['VBDs']), snapshots: this.ids(r['snapshots']), VDI_type: r['type'], tags: r['tags'], cbt_enabled: r['cbt_enabled'], missing: r['missing'],
          ...(r['is_a_snapshot'] === true ? { $snapshot_of: this.id(r['snapshot_of']) } : {}),
        }
      case 'VBD':
        return { VDI: this.id(r['VDI']), VM: this.id(r['VM']), device: r['device'], bootable: r['bootable'], is_cd_drive: r['type'] === 'CD', attached: r['currently_attached'], read_only: r['mode'] === 'RO', position: r['userdevice'] }
      case 'VIF':
        return { device: r['device'], MAC: r['MAC'], MTU: r['MTU'], attached: r['currently_attached'], $network: this.id(r['network']), $VM: this.id(r['VM']), lockingMode: r['locking_mode'] }
      case 'network':
        return { name_label: r['name_label'], bridge: r['bridge'], MTU: r['MTU'], PIFs: this.ids(r['PIFs']), VIFs: this.ids(r['VIFs']), tags: r['tags'] }
      case 'PIF':
        return { device: r['device'], mac: r['MAC'], mtu: r['MTU'], vlan: r['VLAN'], ip: r['IP'], netmask: r['netmask'], gateway: r['gateway'], management: r['management'], attached: r['currently_attached'], physical: r['physical'], $host: this.id(r['host']), $network: this.id(r['network']), mode: r['ip_configuration_mode'] }
      case 'PBD':
        return { attached: r['currently_attached'], host: this.id(r['host']), SR: this.id(r['SR']), device_config: r['device_config'] }
      case 'SM':
        return { name_label: r['name_label'], SM_type: r['type'], vendor: r['vendor'], features: r['features'], configuration: r['configuration'] }
      case 'message':
        return { name: r['name'], body: r['body'], time: timestamp(r['timestamp']), $object: text(r['obj_uuid']) }
      default:
        return {}
    }
  }
}
