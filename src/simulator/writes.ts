import { isKeelError } from '../errors.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import type { Services } from './context.js'
import { invalidValue, XapiFailure } from './failures.js'

/**
 * XAPI fields the lab's PATCH sets, by class: the XAPI name and the lab's,
 * whose setters differ by type. A VM's tags go whole too, in one lab change
 * (other types' a tag at a time, their PATCH taking no tags).
 */
const LAB_FIELDS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  VM: { name_label: 'nameLabel', name_description: 'nameDescription', ha_restart_priority: 'highAvailability', start_delay: 'startDelay', tags: 'tags' },
  VDI: { name_label: 'name_label', name_description: 'name_description' },
  VIF: { locking_mode: 'lockingMode', ipv4_allowed: 'allowedIpv4Addresses', ipv6_allowed: 'allowedIpv6Addresses' },
  SR: { name_label: 'name_label', name_description: 'name_description' },
  network: { name_label: 'name_label', name_description: 'name_description' },
  host: { name_label: 'name_label', name_description: 'name_description' },
  pool: { name_label: 'name_label', name_description: 'name_description' },
}

const asMap = (value: XmlRpcValue | undefined): Readonly<Record<string, XmlRpcValue>> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date) ? (value as Readonly<Record<string, XmlRpcValue>>) : {}

/** The reference's rate limit: the `ratelimit` QoS algorithm with `kbps`. */
function rateLimit(record: Readonly<Record<string, XmlRpcValue>>): Record<string, unknown> {
  const kbps = Number(asMap(record['qos_algorithm_params'])['kbps'])
  return { rateLimit: record['qos_algorithm_type'] === 'ratelimit' && Number.isSafeInteger(kbps) && kbps >= 1 ? kbps : null }
}

/**
 * XAPI fields that carry a lab field in another shape, by class: the lab's
 * PATCH, derived from the record as the write leaves it. The XAPI field
 * itself is laid over the lab's record too, as the client wrote it.
 */
const DERIVED: Readonly<Record<string, Readonly<Record<string, (record: Readonly<Record<string, XmlRpcValue>>) => Record<string, unknown>>>>> = {
  VIF: {
    qos_algorithm_type: rateLimit,
    qos_algorithm_params: rateLimit,
    other_config: (record) => ({ txChecksumming: asMap(record['other_config'])['ethtool-tx'] !== 'false' }),
  },
}

const labFailure = (error: unknown, field: string, value: XmlRpcValue): XapiFailure => {
  if (isKeelError(error) && error.code === 'INVALID_PARAMETERS') return invalidValue(field, typeof value === 'string' ? value : JSON.stringify(value))
  return new XapiFailure('INTERNAL_ERROR', error instanceof Error ? error.message : String(error))
}

/**
 * Sets one field of an object. What the lab models goes through the lab, so
 * Keel's REST API and a restart see it (a VM's other_config among it); what it does not is laid over the
 * lab's record (LabFeed.overlay); the simulator's own objects (sessions,
 * tasks) are rewritten in place.
 */
export async function setField(services: Services, cls: string, ref: string, field: string, value: XmlRpcValue): Promise<void> {
  const stored = services.db.expect(cls, ref)
  const lab = services.feed.labRecord(ref)
  if (lab === undefined) {
    services.db.put(cls, ref, stored.uuid, { ...stored.record, [field]: value })
    return
  }
  const labField = LAB_FIELDS[cls]?.[field]
  if (labField !== undefined && lab['_xapiRef'] === ref && services.driver.capabilities.patch.includes(lab.type)) {
    await services.driver.update(lab, { [labField]: value }).catch((error: unknown) => {
      throw labFailure(error, field, value)
    })
    return
  }
  if (field === 'tags' && Array.isArray(value) && lab['_xapiRef'] === ref && services.driver.capabilities.tags.includes(lab.type)) {
    const wanted = new Set(value.map(String))
    const current = new Set(Array.isArray(lab['tags']) ? lab['tags'].map(String) : [])
    for (const tag of current) if (!wanted.has(tag)) await services.driver.setTag(lab, tag, false)
    for (const tag of wanted) if (!current.has(tag)) await services.driver.setTag(lab, tag, true)
    return
  }
  // Keel's own marks live there (a backup snapshot's, a VM's creation): the lab keeps them with its records, as XAPI's database does.
  if (cls === 'VM' && field === 'other_config' && lab['_xapiRef'] === ref) {
    await services.driver.setOtherConfig(lab, Object.fromEntries(Object.entries(asMap(value)).map(([key, item]) => [key, String(item)])))
    return
  }
  const derive = DERIVED[cls]?.[field]
  if (derive !== undefined && lab['_xapiRef'] === ref && services.driver.capabilities.patch.includes(lab.type)) {
    const changed = Object.entries(derive({ ...stored.record, [field]: value })).filter(([name, next]) => (lab[name] ?? null) !== next)
    if (changed.length > 0) {
      await services.driver.update(lab, Object.fromEntries(changed)).catch((error: unknown) => {
        throw labFailure(error, field, value)
      })
    }
  }
  services.feed.overlay(ref, { [field]: value })
}
