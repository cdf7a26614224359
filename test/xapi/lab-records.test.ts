import { isDeepStrictEqual } from 'node:util'
import t from 'tap'
import { XapiDatabase } from '../../src/simulator/database.js'
import { LabFeed } from '../../src/simulator/lab-feed.js'
import { MAPPED_TYPES } from '../../src/simulator/records/index.js'
import { NULL_REF, typeKind, xapiClass } from '../../src/xapi/datamodel/index.js'
import { context, openLab, type TestScope } from '../helpers/lab.js'
import { XoMapper } from '../helpers/xo-mapping.js'

async function simulate(t: TestScope) {
  const lab = await openLab(t)
  const db = new XapiDatabase()
  const feed = new LabFeed(lab.driver, db)
  feed.start()
  t.teardown(() => feed.stop())
  return { lab, db, feed }
}

/**
 * Fields of the lab's records that XAPI, as the simulator serves it, does not
 * carry, or carries otherwise; every other field must be equal.
 */
const NOT_CARRIED: Readonly<Record<string, string>> = {
  'pool.haRebootVmOnInternalShutdown': 'the simulator leaves the datamodel default',
  'host.certificates': 'the Certificate class is not fetched',
  'SM.supported_image_formats': 'the simulator does not serve it',
  'PIF.deviceName': 'PIF_metrics are not fetched',
  'PIF.speed': 'PIF_metrics are not fetched',
  'VM.creation': "Keel's record of who created the VM, not XAPI's",
  'VM-snapshot.creation': "Keel's record of who created the VM, not XAPI's",
  'VM.vulnerabilities': "Xen Orchestra's own analysis",
  'VM.parent': 'the simulator does not set VM.parent',
  'VM-template.template_info': "the disks come from other_config's `disks` XML, which the simulator does not serve",
  'VM-controller.memory': "XAPI reports a control domain's memory use (memory_actual); the lab does not",
  'VM-controller.installTime': "XAPI's VM_metrics always have an install time; the lab's control domains do not",
}

t.test('every lab record read back from its XAPI record by the XAPI driver\'s mapping gives the lab record, field by field', async (t) => {
  const { lab, db } = await simulate(t)
  const mapper = new XoMapper(db)
  let compared = 0
  const differences: string[] = []
  const seen = new Set<string>()
  for (const type of MAPPED_TYPES) {
    for (const record of lab.driver.objectsOfType(type)) {
      const ref = String(record['_xapiRef'])
      const xo = mapper.toXo(ref)
      if (xo === undefined) {
        differences.push(`${type} ${record.id}: no XAPI object`)
        continue
      }
      t.equal(mapper.id(ref), record.id, `${type} ${record.id}: id`)
      for (const key of new Set([...Object.keys(record), ...Object.keys(xo)])) {
        const field = `${type}.${key}`
        if (Object.hasOwn(NOT_CARRIED, field)) {
          seen.add(field)
          continue
        }
        if (!isDeepStrictEqual(record[key], xo[key])) differences.push(`${field} of ${record.id}: lab ${JSON.stringify(record[key])}, mapped ${JSON.stringify(xo[key])}`)
      }
      compared++
    }
  }
  t.same(differences, [], 'every field carried by XAPI maps back to the lab value')
  t.same([...seen].sort(), Object.keys(NOT_CARRIED).sort(), 'each field listed as not carried exists')
  t.ok(compared > 100, `${compared} records compared`)
})

t.test('records have every field of their class with the datamodel type, and refs that resolve both ways', async (t) => {
  const { db } = await simulate(t)
  const backLinks: Array<[string, string, string, string]> = [
    // [class, set field, target class, target field pointing back]
    ['VM', 'VBDs', 'VBD', 'VM'],
    ['VM', 'VIFs', 'VIF', 'VM'],
    ['SR', 'VDIs', 'VDI', 'SR'],
    ['SR', 'PBDs', 'PBD', 'SR'],
    ['host', 'PBDs', 'PBD', 'host'],
    ['host', 'PIFs', 'PIF', 'host'],
    ['host', 'resident_VMs', 'VM', 'resident_on'],
    ['network', 'PIFs', 'PIF', 'network'],
    ['network', 'VIFs', 'VIF', 'network'],
    ['VDI', 'VBDs', 'VBD', 'VDI'],
    ['VM', 'snapshots', 'VM', 'snapshot_of'],
    ['VDI', 'snapshots', 'VDI', 'snapshot_of'],
  ]
  const classes = ['pool', 'host', 'host_metrics', 'VM', 'VM_metrics', 'VM_guest_metrics', 'VBD', 'VDI', 'VIF', 'SR', 'PBD', 'PIF', 'network', 'SM', 'message', 'GPU_group']
  let problems = 0
  for (const name of classes) {
    const cls = xapiClass(name)
    if (cls === undefined) throw new Error(name)
    t.ok(db.countOfClass(name) > 0, `${name} objects exist`)
    for (const object of db.ofClass(name)) {
      t.equal(object.record['uuid'], object.uuid)
      for (const [field, [, type]] of cls.fields) {
        const value = object.record[field]
        const kind = typeKind(type)
        const ok =
          kind === 'int' ? Number.isInteger(value) : kind === 'bool' ? typeof value === 'boolean' : kind === 'datetime' ? value instanceof Date : kind === 'set' ? Array.isArray(value) : kind === 'map' ? typeof value === 'object' && !Array.isArray(value) : kind === 'float' ? typeof value === 'object' : value !== undefined
        if (!ok) problems++, t.fail(`${name}.${field} (${type}) is ${JSON.stringify(value)}`)
        if (kind === 'ref' && value !== NULL_REF && (typeof value !== 'string' || db.get(value) === undefined) && field !== 'this_user') problems++, t.fail(`${name}.${field} names a missing ${String(value)}`)
      }
    }
  }
  for (const [cls, field, target, back] of backLinks) {
    for (const object of db.ofClass(cls)) {
      for (const ref of object.record[field] as string[]) {
        const other = db.get(ref)
        if (other?.cls !== target || other.record[back] !== object.ref) problems++, t.fail(`${cls}.${field} of ${object.ref} names ${ref}, whose ${back} is not it`)
      }
    }
    for (const other of db.ofClass(target)) {
      const ref = other.record[back] as string
      if (ref === NULL_REF) continue
      const owner = db.get(ref)
      if (owner?.cls === cls && !(owner.record[field] as string[]).includes(other.ref)) problems++, t.fail(`${target}.${back} of ${other.ref} names ${ref}, whose ${field} lacks it`)
    }
  }
  t.equal(problems, 0)
  const snapshots = [...db.ofClass('VM')].filter((vm) => vm.record['is_a_snapshot'] === true)
  t.ok(snapshots.length > 0 && snapshots.every((vm) => vm.record['is_a_template'] === true), 'snapshots are VMs with is_a_snapshot (and is_a_template, as XAPI has them)')
  t.ok([...db.ofClass('VM')].some((vm) => vm.record['is_a_template'] === true && vm.record['is_a_snapshot'] === false), 'templates are VMs with is_a_template')
})

t.test('a lab change rewrites the XAPI records it touches and logs add, mod and del in order', async (t) => {
  const { lab, db } = await simulate(t)
  const vm = [...lab.driver.objectsOfType('VM')].find((record) => record['power_state'] === 'Halted')
  if (vm === undefined) throw new Error('the demo lab has a halted VM')
  const ref = String(vm['_xapiRef'])
  const before = db.generation
  await lab.driver.update(vm, { nameLabel: 'renamed' })
  t.equal(db.get(ref)?.record['name_label'], 'renamed')
  t.same(db.eventsAfter(before, 10).map((e) => [e.cls, e.operation, e.ref]), [['VM', 'mod', ref]], 'one mod: nothing else changed')

  const start = db.generation
  await lab.driver.perform(vm, 'start', {}, context())
  const running = db.get(ref)?.record
  t.equal(running?.['power_state'], 'Running')
  const host = db.get(String(running?.['resident_on']))
  t.equal(host?.cls, 'host')
  t.ok((host?.record['resident_VMs'] as string[]).includes(ref), 'the host lists it as resident')
  t.ok(db.eventsAfter(start, 100).some((e) => e.cls === 'VM_metrics' && e.operation === 'mod'), 'its metrics changed too')

  const halted = [...lab.driver.objectsOfType('VM')].find((record) => record['power_state'] === 'Halted')
  if (halted === undefined) throw new Error('another halted VM')
  const vbds = (db.get(String(halted['_xapiRef']))?.record['VBDs'] as string[]) ?? []
  const removal = db.generation
  await lab.driver.destroy(halted, context())
  t.equal(db.get(String(halted['_xapiRef'])), undefined)
  const removed = db.eventsAfter(removal, 1000).filter((e) => e.operation === 'del').map((e) => e.ref)
  t.ok(removed.includes(String(halted['_xapiRef'])) && vbds.every((vbd) => removed.includes(vbd)), 'the VM and its VBDs are deleted')
})
