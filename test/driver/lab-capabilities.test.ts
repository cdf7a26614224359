import t from 'tap'
import { checkCapabilities } from '../../src/driver/capabilities.js'
import { labCapabilities } from '../../src/driver/lab/capabilities.js'
import type { XoRecord } from '../../src/driver/types.js'
import { isKeelError } from '../../src/errors.js'
import { actionsByType, creationsByType, deletableTypes, patchByType, taggableTypes } from '../../src/model/operations.js'
import { context, openLab } from '../helpers/lab.js'

const sorted = (values: Iterable<string>): string[] => [...values].sort()

t.test('the lab declares exactly the catalogue', async (t) => {
  t.doesNotThrow(() =>
    checkCapabilities(labCapabilities, { actionsByType, patchTypes: Object.keys(patchByType), deletableTypes, taggableTypes, creatableTypes: Object.keys(creationsByType) }),
  )
  const catalogueActions = Object.entries(actionsByType).flatMap(([type, specs]) => specs.map((spec) => `${type} ${spec.name}`))
  const labActions = Object.entries(labCapabilities.actions).flatMap(([type, names]) => names.map((name) => `${type} ${name}`))
  t.ok(catalogueActions.length > 0)
  t.same(sorted(labActions), sorted(catalogueActions), 'every action, and no other')
  t.same(sorted(labCapabilities.patch), sorted(Object.keys(patchByType)))
  t.same(sorted(labCapabilities.destroy), sorted(deletableTypes))
  t.same(sorted(labCapabilities.tags), sorted(taggableTypes))
  t.same(sorted(labCapabilities.create ?? []), sorted(Object.keys(creationsByType)))
  t.ok(Object.isFrozen(labCapabilities) && Object.isFrozen(labCapabilities.actions) && Object.isFrozen(labCapabilities.patch))
})

t.test('what the lab does not declare is a NO_SUCH_OBJECT, and changes nothing', async (t) => {
  const { driver, changes } = await openLab(t)
  const first = (type: string): XoRecord => {
    const [record] = driver.objectsOfType(type)
    if (record === undefined) throw new Error(`the demo lab has no ${type}`)
    return record
  }
  const vm = first('VM')
  const host = first('host')
  const pbd = first('PBD')
  const attempts: Array<[string, () => Promise<unknown>]> = [
    ['an action of another type', () => driver.perform(vm, 'enable', {}, context())],
    ['an inherited name', () => driver.perform(vm, 'toString', {}, context())],
    ['an action on a type without any', () => driver.perform(pbd, 'start', {}, context())],
    ['PATCH', () => driver.update(pbd, { bootable: true })],
    ['DELETE', () => driver.destroy(host, context())],
    ['POST', () => driver.create('host', {}, context())],
    ['tags', () => driver.setTag(pbd, 'x', true)],
  ]
  for (const [name, attempt] of attempts) {
    const error = await attempt().then(
      () => undefined,
      (error: unknown) => error,
    )
    t.ok(isKeelError(error) && error.code === 'NO_SUCH_OBJECT', `${name}: ${String(error)}`)
  }
  t.equal(driver.getObject(vm.id), vm)
  t.equal(driver.getObject(host.id), host)
  t.equal(driver.getObject(pbd.id), pbd)
  t.same(changes, [])
})
