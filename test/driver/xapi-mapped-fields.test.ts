import { isDeepStrictEqual } from 'node:util'
import t from 'tap'
import { isRef, type MappingContext, type XapiObject, type XapiRecord } from '../../src/driver/xapi/mapping/context.js'
import { mappedFields } from '../../src/driver/xapi/mapping/fields.js'
import { vmId, WATCHED_CLASSES, xoRecord } from '../../src/driver/xapi/mapping/index.js'
import { XapiDatabase } from '../../src/simulator/database.js'
import { LabFeed } from '../../src/simulator/lab-feed.js'
import { openLab } from '../helpers/lab.js'

/** A mapping context over the simulator's database, each record as `view` makes it. */
function contextOver(db: XapiDatabase, view: (object: XapiObject) => XapiRecord): { context: MappingContext; object: (ref: string) => XapiObject | undefined } {
  let poolId = ''
  for (const pool of db.ofClass('pool')) poolId = pool.uuid
  const object = (ref: unknown): XapiObject | undefined => {
    const stored = isRef(ref) ? db.get(ref) : undefined
    return stored === undefined ? undefined : { cls: stored.cls, ref: stored.ref, record: view({ cls: stored.cls, ref: stored.ref, record: stored.record }) }
  }
  const id = (ref: unknown): string | undefined => {
    const found = object(ref)
    return found === undefined ? undefined : found.cls === 'VM' ? vmId(found.record, poolId) : String(found.record['uuid'])
  }
  const idOfUuid = (uuid: string): string | undefined => {
    for (const cls of WATCHED_CLASSES) for (const stored of db.ofClass(cls)) if (stored.uuid === uuid) return id(stored.ref)
    return undefined
  }
  return { context: { poolId, object, id, idOfUuid }, object }
}

t.test('the index keeps of each record the fields its mapping reads, and maps it as the whole record (issue 28)', async (t) => {
  const lab = await openLab(t)
  const db = new XapiDatabase()
  const feed = new LabFeed(lab.driver, db)
  feed.start()
  t.teardown(() => feed.stop())

  const whole = contextOver(db, ({ record }) => record)
  const trimmed = contextOver(db, ({ cls, record }) => mappedFields(cls, record))
  const read = new Set<string>()
  const watched = contextOver(db, ({ cls, record }) => new Proxy(record, { get: (target, key, receiver) => (typeof key === 'string' && read.add(`${cls}.${key}`), Reflect.get(target, key, receiver)) }))
  let mapped = 0
  const differences: string[] = []
  for (const cls of WATCHED_CLASSES) {
    for (const { ref } of db.ofClass(cls)) {
      const expected = xoRecord(whole.object(ref) as XapiObject, whole.context)
      if (!isDeepStrictEqual(xoRecord(trimmed.object(ref) as XapiObject, trimmed.context), expected)) differences.push(`${cls} ${ref}`)
      xoRecord(watched.object(ref) as XapiObject, watched.context)
      if (expected !== undefined) mapped++
    }
  }
  t.same(differences, [], 'each record maps to the same XO record from its trimmed fields')
  t.ok(mapped > 50, `${mapped} records mapped`)
  const dropped = [...read].filter((field) => {
    const [cls = '', key = ''] = field.split('.')
    return mappedFields(cls, { [key]: 1 })[key] !== 1
  })
  t.same(dropped, [], 'every field a mapper read is kept')
  t.ok(read.has('SR.shared') && read.has('host.software_version'), 'the reads of other objects are counted')

  const vm = db.ofClass('VM')[Symbol.iterator]().next().value
  t.ok(vm !== undefined && Object.keys(mappedFields('VM', vm.record)).length < Object.keys(vm.record).length, 'a VM keeps fewer fields than XAPI sends')
  t.equal(mappedFields('task', vm?.record ?? {}), vm?.record, 'a class the mapping does not read is kept whole')
})
