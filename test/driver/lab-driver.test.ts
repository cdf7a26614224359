import t from 'tap'
import { mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { collectGarbage } from '../../src/driver/lab/disk-gc.js'
import { LabDriver, writeLab } from '../../src/driver/lab/driver.js'
import { openDatabase } from '../../src/store/database.js'
import type { LabSpec } from '../../src/driver/lab/spec.js'
import type { ObjectChange, XoRecord } from '../../src/driver/types.js'
import type { KeelError } from '../../src/errors.js'
import { context, CREATOR, NOW, openLab as openAnyLab, removeLater, type Lab, type TestScope } from '../helpers/lab.js'

/** A lab whose clock stands still at NOW; `keep` leaves its data for a reopening. */
const openLab = (t: TestScope, options: { spec?: LabSpec; dataDir?: string; keep?: boolean } = {}): Promise<Lab> =>
  openAnyLab(t, { clock: () => NOW, ...options })

const vmNamed = (driver: LabDriver, name: string): XoRecord => {
  const vm = [...driver.objectsOfType('VM')].find((record) => record['name_label'] === name)
  if (vm === undefined) throw new Error(`no VM ${name}`)
  return vm
}

t.test('a fresh data directory is seeded with the demo lab', async (t) => {
  const { db, driver } = await openLab(t)
  t.equal(driver.countOfType('host'), 3)
  t.equal(driver.countOfType('VM'), 12)
  t.equal(driver.countOfType('VM-snapshot'), 2)
  t.equal(driver.countOfType('nothing'), 0)
  t.same([...driver.objectsOfType('nothing')], [])
  const vms = driver.objectsOfType('VM')
  t.equal([...vms].length, 12)
  t.equal([...vms].length, 12, 'a listing can be walked twice')
  t.same(
    [...vms].map((vm) => vm['name_label']).slice(0, 3),
    ['web-01', 'web-02', 'db-01'],
    'in the order of the description',
  )
  const web = vmNamed(driver, 'web-01')
  t.equal(driver.getObject(web.id), web)
  t.equal(driver.getObject('nope'), undefined)
  t.same((web['creation'] as Record<string, string>)['creator'], CREATOR)
  t.ok(Object.isFrozen(web) && Object.isFrozen(web['memory']) && Object.isFrozen((web['memory'] as { dynamic: number[] }).dynamic))
  t.equal(db.prepare("SELECT value FROM lab_meta WHERE key = 'seeded_at'").pluck().get(), String(NOW))
})

t.test('a change is durable, replaces the object, and reaches listeners with previous', async (t) => {
  const first = await openLab(t, { keep: true })
  const { driver } = first
  const web = vmNamed(driver, 'web-01')
  const db = vmNamed(driver, 'db-01')
  const received: ObjectChange[] = []
  const unsubscribe = driver.subscribe((change) => received.push(change))

  const halted = { ...web, power_state: 'Halted', name_label: 'web-01 (stopped)' }
  driver.applyChanges([{ kind: 'update', object: halted }])
  const stored = driver.getObject(web.id)
  t.not(stored, web, 'a new object')
  t.same(stored, halted)
  t.ok(Object.isFrozen(stored))
  t.equal(driver.getObject(db.id), db, 'other records keep their identity')
  t.equal(received.length, 1)
  t.equal(received[0]?.kind, 'update')
  t.equal(received[0]?.object, stored)
  t.equal(received[0]?.previous, web)
  t.same(
    [...driver.objectsOfType('VM')].map((vm) => vm.id).indexOf(web.id),
    0,
    'an updated record keeps its place',
  )

  const added = { ...db, id: 'e1b2c3d4-0000-4000-8000-000000000042', uuid: 'e1b2c3d4-0000-4000-8000-000000000042', name_label: 'db-03' }
  driver.applyChanges([
    { kind: 'add', object: added },
    { kind: 'remove', object: { id: db.id, type: 'VM' } },
  ])
  t.equal(driver.getObject(db.id), undefined)
  t.equal(driver.countOfType('VM'), 12)
  t.same(
    received.slice(1).map((change) => [change.kind, change.object.id, change.previous?.id]),
    [
      ['add', added.id, undefined],
      ['remove', db.id, db.id],
    ],
  )
  t.equal(received[2]?.object, db, 'a removal carries the last known record')

  unsubscribe()
  driver.applyChanges([{ kind: 'update', object: { ...halted, tags: ['quiet'] } }])
  t.equal(received.length, 3, 'no delivery after unsubscribing')
  const order = [...driver.objectsOfType('VM')].map((vm) => vm.id)
  await first.driver.close()
  first.db.close()

  const second = await openLab(t, { dataDir: first.dataDir })
  t.same(second.driver.getObject(web.id), { ...halted, tags: ['quiet'] }, 'the change survived the restart')
  t.equal(second.driver.getObject(db.id), undefined)
  t.same(second.driver.getObject(added.id), added)
  t.same([...second.driver.objectsOfType('VM')].map((vm) => vm.id), order, 'same order after the restart')
  t.equal(second.driver.countOfType('host'), 3, 'not seeded twice')
})

t.test('a bad batch changes nothing', async (t) => {
  const { db, driver } = await openLab(t)
  const web = vmNamed(driver, 'web-01')
  const received: ObjectChange[] = []
  driver.subscribe((change) => received.push(change))
  const before = db.prepare('SELECT data FROM lab_objects WHERE id = ?').pluck().get(web.id)
  const attempt = (changes: Parameters<LabDriver['applyChanges']>[0]): KeelError | undefined => {
    try {
      driver.applyChanges(changes)
      return undefined
    } catch (error) {
      return error as KeelError
    }
  }
  t.equal(
    attempt([
      { kind: 'update', object: { ...web, name_label: 'renamed' } },
      { kind: 'update', object: { id: 'missing', type: 'VM' } },
    ])?.code,
    'NO_SUCH_OBJECT',
  )
  t.equal(attempt([{ kind: 'add', object: web }])?.code, 'OBJECT_ALREADY_EXISTS')
  t.equal(
    attempt([
      { kind: 'remove', object: web },
      { kind: 'remove', object: web },
    ])?.code,
    'NO_SUCH_OBJECT',
    'checked against the state the batch leaves',
  )
  t.equal(driver.getObject(web.id), web)
  t.equal(db.prepare('SELECT data FROM lab_objects WHERE id = ?').pluck().get(web.id), before)
  t.same(received, [])
})

t.test('a failing listener does not starve the others nor undo the change', async (t) => {
  const { driver } = await openLab(t)
  const web = vmNamed(driver, 'web-01')
  let delivered = 0
  driver.subscribe(() => {
    throw new Error('boom')
  })
  driver.subscribe(() => delivered++)
  t.throws(() => driver.applyChanges([{ kind: 'update', object: { ...web, tags: [] } }]), AggregateError)
  t.equal(delivered, 1)
  t.same(driver.getObject(web.id)?.['tags'], [])
})

t.test('a record that changes type moves to its new collection', async (t) => {
  const first = await openLab(t, { keep: true })
  const staging = vmNamed(first.driver, 'staging-app')
  first.driver.applyChanges([{ kind: 'update', object: { ...staging, type: 'VM-template', isDefaultTemplate: false } }])
  t.equal(first.driver.countOfType('VM'), 11)
  t.equal(first.driver.countOfType('VM-template'), 7)
  const templates = [...first.driver.objectsOfType('VM-template')].map((record) => record.id)
  t.equal(templates.at(-1), staging.id)
  await first.driver.close()
  first.db.close()
  const second = await openLab(t, { dataDir: first.dataDir })
  t.same([...second.driver.objectsOfType('VM-template')].map((record) => record.id), templates)
})

t.test('an emptied lab stays empty; writeLab replaces the content', async (t) => {
  const first = await openLab(t, { keep: true })
  const all = first.db.prepare('SELECT id, type FROM lab_objects').all() as Array<{ id: string; type: string }>
  first.driver.applyChanges(all.map((object) => ({ kind: 'remove' as const, object })))
  await first.driver.close()
  first.db.close()

  const second = await openLab(t, { dataDir: first.dataDir })
  t.equal(second.driver.countOfType('VM'), 0, 'not seeded again')
  const pool = { id: 'p', type: 'pool', name_label: 'replacement' }
  writeLab(second.db, [pool], NOW)
  await second.driver.open()
  t.same([...second.driver.objectsOfType('pool')], [pool])
  t.equal(second.driver.countOfType('host'), 0)
})

t.test('the driver seeds a given spec instead of the demo', async (t) => {
  const spec: LabSpec = {
    pools: [
      {
        name: 'Tiny',
        hosts: [{ name: 'solo', address: '192.168.1.10', sockets: 1, cores: 4, memory: '32 GiB' }],
        networks: [{ name: 'LAN', device: 'eth0', subnet: '192.168.1.0/24', management: true }],
        srs: [{ name: 'Local', driver: 'ext', size: '1 TiB', host: 'solo' }],
        templates: [{ name: 'Alpine', os: 'alpine-3', cpus: 1, memory: '512 MiB', disk: '2 GiB' }],
        vms: [
          {
            name: 'router',
            template: 'Alpine',
            power: 'Running',
            host: 'solo',
            cpus: 1,
            memory: '512 MiB',
            disks: [{ size: '2 GiB', sr: 'Local' }],
            networks: ['LAN'],
          },
        ],
      },
    ],
  }
  const { driver } = await openLab(t, { spec })
  t.equal(driver.countOfType('VM'), 1)
  t.same(vmNamed(driver, 'router')['addresses'], { '0/ipv4/0': '192.168.1.100' })
})

t.test('a closed lab has ended its background disk work, so a restart in the same process finds the folders still', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-lab-'))
  removeLater(t, dataDir)
  const db = openDatabase(dataDir)
  t.teardown(() => db.close())
  const driver = new LabDriver(db, { creatorId: CREATOR, clock: () => NOW, stepDelay: 0, dataDir })
  await driver.open()
  const web = vmNamed(driver, 'web-01')
  const snapshot = await driver.perform(web, 'snapshot', {}, context())
  // Its disks' bases now have one child each: removing the snapshot starts merges in the background.
  await driver.destroy(driver.getObject(snapshot?.id ?? '') as XoRecord, context())
  const ids = new Set([...driver.objectsOfType('VDI'), ...driver.objectsOfType('VDI-snapshot')].map((disk) => disk.id))
  await driver.close()
  const folders = readdirSync(join(dataDir, 'srs'))
  t.ok(folders.length > 0, 'the demo lab has disk content')
  for (const sr of folders) t.equal(await collectGarbage(join(dataDir, 'srs', sr), (id) => ids.has(id)), false, `${sr}: nothing left to tidy`)
})
