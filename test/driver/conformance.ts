import type { Test } from 'tap'
import type { Driver, ObjectChange, OperationContext, XoRecord } from '../../src/driver/types.js'
import { isKeelError } from '../../src/errors.js'
import { INSTALLATION_MARK } from '../../src/installation.js'
import { recordSchemas } from '../../src/model/records.js'

/**
 * The driver contract of src/driver/types.ts as cases any driver runs:
 * `driverConformance(t, factory)` in a `*.test.ts` of that driver. Each case
 * opens its own driver, so cases do not depend on one another or on order.
 * An operation's changes are required in the index and published only once
 * `settled()` resolves after it, never before (test/driver/lagged-driver.ts
 * runs these cases with its index behind).
 */

/** A driver on fresh data, and a way to open another one on the same data, as after a restart. */
export interface OpenedDriver {
  readonly driver: Driver
  /** a second driver on the same data; both are closed (and the data removed) when the test ends */
  reopen(): Promise<Driver>
}

export interface ActionRequest {
  readonly object: XoRecord
  readonly action: string
  readonly params?: Readonly<Record<string, unknown>>
}

/** The objects and requests the cases use, chosen in a freshly opened driver (by name or type, not by id). */
export interface ConformanceCases {
  /** a declared action that succeeds and changes its object */
  readonly action: ActionRequest
  /** a declared action the object's state refuses */
  readonly wrongState: ActionRequest
  /** a declared action whose first published change is followed by more steps (longer than the driver's index lags), so it can be aborted half-way */
  readonly abortable: ActionRequest
  /** a PATCH that succeeds, and fields of the record as it reads back afterwards */
  readonly patch: {
    readonly object: XoRecord
    readonly patch: Readonly<Record<string, unknown>>
    readonly expect: Readonly<Record<string, unknown>>
  }
  /** an object DELETE destroys */
  readonly destroy: XoRecord
  /** a VM its `snapshot` action snapshots now */
  readonly snapshotVm: XoRecord
}

export interface DriverFactory {
  /** Opens a driver on fresh data, with simulated steps short enough for tests; cleaned up when `t` ends. */
  open(t: Test): Promise<OpenedDriver>
  cases(driver: Driver): ConformanceCases
  /** what breaks the driver's own consistency rules in its current state (none: an empty list) */
  problems?(driver: Driver): string[]
}

const TYPES = Object.keys(recordSchemas)
const TAG = 'conformance'
const USER = 'c0ffee00-0000-4000-8000-00000000c0de'

interface AbortableContext extends OperationContext {
  readonly controller: AbortController
}

function context(): AbortableContext {
  const controller = new AbortController()
  return { signal: controller.signal, userId: USER, progress: () => undefined, controller }
}

function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true
  return Object.isFrozen(value) && Object.values(value).every(isDeepFrozen)
}

/** Every record the driver serves, by id. */
function snapshot(driver: Driver): Map<string, XoRecord> {
  return new Map(TYPES.flatMap((type) => [...driver.objectsOfType(type)].map((record) => [record.id, record] as const)))
}

/** Every listing, in order. */
function listings(driver: Driver): Record<string, XoRecord[]> {
  return Object.fromEntries(TYPES.map((type) => [type, [...driver.objectsOfType(type)]]))
}

/** Every change a driver publishes from now on. */
function record(driver: Driver): ObjectChange[] {
  const changes: ObjectChange[] = []
  driver.subscribe((change) => changes.push(change))
  return changes
}

/**
 * Applies published changes to the state they started from, checking each
 * against it: an update's `previous` is the record it replaces, a removal
 * carries the last known record. Returns the state they lead to.
 */
function replay(before: ReadonlyMap<string, XoRecord>, changes: readonly ObjectChange[]): { state: Map<string, XoRecord>; problems: string[] } {
  const state = new Map(before)
  const problems: string[] = []
  changes.forEach(({ kind, object, previous }, index) => {
    const known = state.get(object.id)
    const at = `change ${index} (${kind} ${object.type} ${object.id})`
    if (!isDeepFrozen(object)) problems.push(`${at}: the record is not frozen`)
    if (kind === 'add') {
      if (known !== undefined) problems.push(`${at}: the object already existed`)
      if (previous !== undefined) problems.push(`${at}: an addition has a previous record`)
      state.set(object.id, object)
    } else if (kind === 'update') {
      if (known === undefined) problems.push(`${at}: the object did not exist`)
      if (previous !== known) problems.push(`${at}: previous is not the record it replaces`)
      if (object === known) problems.push(`${at}: the changed record is the same object`)
      state.set(object.id, object)
    } else {
      if (known === undefined) problems.push(`${at}: the object did not exist`)
      if (object !== known) problems.push(`${at}: does not carry the last known record`)
      if (previous !== undefined && previous !== known) problems.push(`${at}: previous is not the last known record`)
      state.delete(object.id)
    }
  })
  return { state, problems }
}

/** Where the driver's records are not, object for object, `expected`. */
function identityProblems(driver: Driver, expected: ReadonlyMap<string, XoRecord>): string[] {
  const problems: string[] = []
  const served = snapshot(driver)
  for (const [id, current] of served) {
    const wanted = expected.get(id)
    if (wanted === undefined) problems.push(`${current.type} ${id}: unexpected`)
    else if (wanted !== current) problems.push(`${current.type} ${id}: ${JSON.stringify(wanted) === JSON.stringify(current) ? 'an equal but new object' : 'different'}`)
  }
  for (const [id, wanted] of expected) if (!served.has(id)) problems.push(`${wanted.type} ${id}: missing`)
  return problems
}

/** The code of the KeelError `promise` rejects with, or a description of what happened instead. */
async function failureOf(promise: Promise<unknown>): Promise<{ code: string; data: Record<string, unknown> | undefined }> {
  try {
    await promise
  } catch (error) {
    return isKeelError(error) ? { code: error.code, data: error.data } : { code: `not a KeelError: ${String(error)}`, data: undefined }
  }
  return { code: 'no failure', data: undefined }
}

/** A copy of a record under an id nobody has. */
const ghost = (object: XoRecord): XoRecord => Object.freeze({ ...object, id: `conformance-missing-${object.id}` })

export function driverConformance(t: Test, factory: DriverFactory): void {
  t.test('objects: listings, counts and lookups agree, in a stable order, frozen', async (t) => {
    const { driver } = await factory.open(t)
    const problems: string[] = []
    const ids = new Set<string>()
    for (const type of TYPES) {
      const first = [...driver.objectsOfType(type)]
      const second = [...driver.objectsOfType(type)]
      if (first.length !== driver.countOfType(type)) problems.push(`${type}: ${first.length} listed, ${driver.countOfType(type)} counted`)
      if (first.length !== second.length || first.some((record, i) => second[i] !== record)) problems.push(`${type}: a second walk differs`)
      for (const record of first) {
        if (record.type !== type) problems.push(`${type} ${record.id}: listed with type ${record.type}`)
        if (driver.getObject(record.id) !== record) problems.push(`${type} ${record.id}: getObject gives another object`)
        if (!isDeepFrozen(record)) problems.push(`${type} ${record.id}: not frozen`)
        if (ids.has(record.id)) problems.push(`${type} ${record.id}: the id is used twice`)
        ids.add(record.id)
      }
    }
    t.ok(ids.size > 0, 'the driver serves objects')
    t.same(problems, [], 'each listing agrees with its count and with getObject, walks the same twice, and is frozen')
    t.same([...driver.objectsOfType('conformance-no-such-type')], [])
    t.equal(driver.countOfType('conformance-no-such-type'), 0)
    t.equal(driver.getObject('conformance-no-such-id'), undefined)
  })

  t.test('identity: a change makes new objects of what it changed, and only of that', async (t) => {
    const { driver } = await factory.open(t)
    const { patch } = factory.cases(driver)
    const before = snapshot(driver)
    const placeBefore = [...driver.objectsOfType(patch.object.type)].findIndex((record) => record.id === patch.object.id)
    const changes = record(driver)
    await driver.update(patch.object, patch.patch)
    await driver.settled()
    t.ok(changes.length > 0, 'the change was published')
    const changed = new Set(changes.map((change) => change.object.id))
    t.ok(changed.has(patch.object.id))
    const { state, problems } = replay(before, changes)
    t.same(problems, [], 'each change follows from the state before it')
    t.same(identityProblems(driver, state), [], 'the changed records are new objects, every other record is the same object')
    t.ok([...before.keys()].filter((id) => !changed.has(id)).length > 0, 'some records did not change')
    t.equal(
      [...driver.objectsOfType(patch.object.type)].findIndex((record) => record.id === patch.object.id),
      placeBefore,
      'the changed record keeps its place',
    )
    t.same(identityProblems(driver, snapshot(driver)), [], 'reading again gives the same objects')
  })

  t.test('changes: every committed change reaches every subscriber, and they replay to the state served', async (t) => {
    const { driver } = await factory.open(t)
    const { action } = factory.cases(driver)
    const before = snapshot(driver)
    const changes = record(driver)
    const other: ObjectChange[] = []
    const unsubscribe = driver.subscribe((change) => other.push(change))
    await driver.perform(action.object, action.action, action.params ?? {}, context())
    await driver.settled()
    t.ok(changes.length > 0, 'the action was published')
    t.ok(
      other.length === changes.length && other.every((change, i) => change === changes[i]),
      'every subscriber gets the same changes, in the same order',
    )
    const { state, problems } = replay(before, changes)
    t.same(problems, [], 'each change follows from the state before it')
    t.same(identityProblems(driver, state), [])

    unsubscribe()
    const delivered = other.length
    const { destroy } = factory.cases(driver)
    const from = changes.length
    await driver.destroy(destroy, context())
    await driver.settled()
    t.equal(other.length, delivered, 'nothing reaches a listener after it unsubscribed')
    const after = changes.slice(from)
    t.ok(
      after.some((change) => change.kind === 'remove' && change.object.id === destroy.id),
      'the removal was published (replayed below: it carries the last known record)',
    )
    const destroyed = replay(state, after)
    t.same(destroyed.problems, [], 'each change follows from the state before it')
    t.same(identityProblems(driver, destroyed.state), [], 'the changes replay to the state served')
  })

  t.test('durability: what a listener saw, a reopened driver sees', async (t) => {
    const opened = await factory.open(t)
    const { driver } = opened
    const { patch, action } = factory.cases(driver)
    let seen: { change: ObjectChange; reopened: Promise<Driver> } | undefined
    const unsubscribe = driver.subscribe((change) => {
      // Opened from inside the listener: the change must already be stored when it is published.
      seen ??= { change, reopened: opened.reopen() }
    })
    await driver.update(patch.object, patch.patch)
    await driver.settled()
    unsubscribe()
    t.ok(seen !== undefined, 'the change was published')
    if (seen === undefined) return
    const reopened = await seen.reopened
    t.same(reopened.getObject(seen.change.object.id), seen.change.object, 'the change is there')

    await driver.perform(action.object, action.action, action.params ?? {}, context())
    await driver.settled()
    t.same(listings(await opened.reopen()), listings(driver), 'after an action, every record and every order')
  })

  t.test('marks: a VM snapshot carries the other_config Keel gives it, after a reopen too', async (t) => {
    const opened = await factory.open(t)
    const { driver } = opened
    const marks = { [INSTALLATION_MARK]: 'c0ffee00-0000-4000-8000-00000000c0de', 'xo:backup:job': 'conformance' }
    const created = await driver.perform(factory.cases(driver).snapshotVm, 'snapshot', { name_label: '[XO Backup conformance] marks', other_config: marks }, context())
    t.equal(created?.type, 'VM-snapshot')
    t.match((await driver.waitFor(created?.id ?? ''))['other'], marks)
    t.match((await (await opened.reopen()).waitFor(created?.id ?? ''))['other'], marks)
  })

  t.test('operations: each declared capability works', async (t) => {
    const { driver } = await factory.open(t)
    const { action, patch, destroy } = factory.cases(driver)
    const { capabilities } = driver

    const actions = Object.hasOwn(capabilities.actions, action.object.type) ? capabilities.actions[action.object.type] : undefined
    t.ok(actions?.includes(action.action), `${action.object.type} ${action.action} is declared`)
    const created = await driver.perform(action.object, action.action, action.params ?? {}, context())
    await driver.settled()
    if (created !== undefined) t.equal(driver.getObject(created.id)?.type, created.type, 'what it created is served')

    t.ok(capabilities.patch.includes(patch.object.type), `PATCH of ${patch.object.type} is declared`)
    await driver.update(patch.object, patch.patch)
    await driver.settled()
    t.match(driver.getObject(patch.object.id), patch.expect, 'PATCH applied')

    const tagged = capabilities.tags.flatMap((type) => [...driver.objectsOfType(type)].slice(0, 1))
    t.ok(tagged.length > 0, 'some declared tag type has objects')
    for (const object of tagged) {
      await driver.setTag(object, TAG, true)
      await driver.settled()
      const withTag = driver.getObject(object.id)
      t.ok((withTag?.['tags'] as unknown[] | undefined)?.includes(TAG), `${object.type}: tag added`)
      await driver.setTag(object, TAG, true)
      await driver.settled()
      t.equal(driver.getObject(object.id), withTag, `${object.type}: adding it again changes nothing`)
      await driver.setTag(object, TAG, false)
      await driver.settled()
      t.notOk((driver.getObject(object.id)?.['tags'] as unknown[] | undefined)?.includes(TAG), `${object.type}: tag removed`)
    }

    t.ok(capabilities.destroy.includes(destroy.type), `DELETE of ${destroy.type} is declared`)
    const count = driver.countOfType(destroy.type)
    await driver.destroy(destroy, context())
    await driver.settled()
    t.equal(driver.getObject(destroy.id), undefined, 'destroyed')
    t.notOk([...driver.objectsOfType(destroy.type)].some((record) => record.id === destroy.id))
    t.equal(driver.countOfType(destroy.type), count - 1)
  })

  t.test('index: settled() and waitFor() resolve with what the index holds, and give up with INDEX_TIMEOUT', async (t) => {
    const { driver } = await factory.open(t)
    const { action } = factory.cases(driver)
    await driver.settled()
    const before = driver.getObject(action.object.id)
    t.equal(await driver.waitFor(action.object.id), before, 'a record the index holds, at once')

    const changes = record(driver)
    const changed = driver.waitFor(action.object.id, { until: (current) => current !== before })
    await driver.perform(action.object, action.action, action.params ?? {}, context())
    const seen = await changed
    await driver.settled()
    t.ok(
      changes.some((change) => change.object === seen),
      'waitFor resolves with a published record of the object that meets the condition',
    )

    const missing = await failureOf(driver.waitFor('conformance-no-such-id', { timeout: 20 }))
    t.same(missing, { code: 'INDEX_TIMEOUT', data: { id: 'conformance-no-such-id', timeout: 20 } }, 'an object that never shows')
    const never = await failureOf(driver.waitFor(action.object.id, { timeout: 20, until: () => false }))
    t.same(never, { code: 'INDEX_TIMEOUT', data: { id: action.object.id, timeout: 20 } }, 'a condition that never holds')
  })

  t.test('failures: an action the state refuses is INCORRECT_STATE with {actual, expected}, and changes nothing', async (t) => {
    const { driver } = await factory.open(t)
    const { wrongState } = factory.cases(driver)
    const before = snapshot(driver)
    const changes = record(driver)
    const { code, data } = await failureOf(driver.perform(wrongState.object, wrongState.action, wrongState.params ?? {}, context()))
    await driver.settled()
    t.equal(code, 'INCORRECT_STATE')
    t.ok(data !== undefined && 'actual' in data && 'expected' in data, `data has actual and expected: ${JSON.stringify(data)}`)
    t.same(changes, [], 'nothing published')
    t.same(identityProblems(driver, before), [], 'every record is the same object')
  })

  t.test('failures: an action whose signal is already aborted is ABORTED before it changes anything', async (t) => {
    const { driver } = await factory.open(t)
    const { abortable } = factory.cases(driver)
    const before = snapshot(driver)
    const changes = record(driver)
    const ctx = context()
    ctx.controller.abort()
    t.equal((await failureOf(driver.perform(abortable.object, abortable.action, abortable.params ?? {}, ctx))).code, 'ABORTED')
    await driver.settled()
    t.same(changes, [], 'nothing published')
    t.same(identityProblems(driver, before), [], 'every record is the same object')
  })

  t.test('failures: an action aborted after its first change is ABORTED and leaves a consistent, durable state', async (t) => {
    const opened = await factory.open(t)
    const { driver } = opened
    const { abortable } = factory.cases(driver)
    const before = snapshot(driver)
    const changes = record(driver)
    const ctx = context()
    driver.subscribe(() => ctx.controller.abort())
    t.equal((await failureOf(driver.perform(abortable.object, abortable.action, abortable.params ?? {}, ctx))).code, 'ABORTED')
    await driver.settled()
    t.ok(changes.length > 0, 'it had changed something')
    const { state, problems } = replay(before, changes)
    t.same(problems, [], 'each change follows from the state before it')
    t.same(identityProblems(driver, state), [], 'every change it made or undid was published')
    t.same(factory.problems?.(driver) ?? [], [], 'consistent')
    t.same(listings(await opened.reopen()), listings(driver), 'and stored')
  })

  t.test('failures: an object nobody has is NO_SUCH_OBJECT, and nothing changes', async (t) => {
    const { driver } = await factory.open(t)
    const { action, patch, destroy } = factory.cases(driver)
    const [tagged] = driver.capabilities.tags.flatMap((type) => [...driver.objectsOfType(type)].slice(0, 1))
    t.ok(tagged !== undefined, 'some declared tag type has objects')
    const before = snapshot(driver)
    const changes = record(driver)
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['action', () => driver.perform(ghost(action.object), action.action, action.params ?? {}, context())],
      ['PATCH', () => driver.update(ghost(patch.object), patch.patch)],
      ['DELETE', () => driver.destroy(ghost(destroy), context())],
    ]
    if (tagged !== undefined) attempts.push(['tags', () => driver.setTag(ghost(tagged), TAG, true)])
    for (const [name, attempt] of attempts) t.equal((await failureOf(attempt())).code, 'NO_SUCH_OBJECT', name)
    await driver.settled()
    t.same(changes, [], 'nothing published')
    t.same(identityProblems(driver, before), [], 'every record is the same object')
  })
}
