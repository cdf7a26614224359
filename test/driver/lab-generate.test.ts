import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { LabDriver, writeLab } from '../../src/driver/lab/driver.js'
import { expandLab } from '../../src/driver/lab/expand.js'
import { generateLabSpec } from '../../src/driver/lab/generate.js'
import { parseLabSpec } from '../../src/driver/lab/spec.js'
import type { HostRecord, VmRecord } from '../../src/model/records.js'
import { openDatabase } from '../../src/store/database.js'
import { linkProblems } from './fixtures/links.js'

const NOW = Date.UTC(2025, 0, 15, 12)

t.test('generated specs are valid, varied and reproducible', async (t) => {
  const spec = generateLabSpec({ vms: 500, hosts: 7 })
  t.doesNotThrow(() => parseLabSpec(JSON.parse(JSON.stringify(spec)), 'generated'), 'a valid lab description')
  const text = JSON.stringify(spec)
  t.equal(JSON.stringify(generateLabSpec({ vms: 500, hosts: 7 })), text, 'same options, same spec')
  t.not(JSON.stringify(generateLabSpec({ vms: 500, hosts: 7, seed: 2 })), text, 'the seed matters')
  const pool = spec.pools[0]
  t.equal(pool?.hosts.length, 7)
  t.equal(pool?.vms.length, 500)
  t.same([...new Set(pool?.vms.map((vm) => vm.power))].sort(), ['Halted', 'Paused', 'Running', 'Suspended'])
  for (const vm of pool?.vms ?? []) {
    if (vm.disks.length < 1 || vm.disks.length > 2 || vm.networks.length < 1 || vm.networks.length > 2) {
      t.fail(`${vm.name}: ${vm.disks.length} disks, ${vm.networks.length} VIFs`)
    }
  }
  const onHost = new Map<string, number>()
  for (const vm of pool?.vms ?? []) if (vm.host !== undefined) onHost.set(vm.host, (onHost.get(vm.host) ?? 0) + 1)
  t.equal(onHost.size, 7, 'every host runs VMs')

  const records = expandLab(spec, { creatorId: 'admin', now: NOW })
  t.same(linkProblems(records), [])
  const hosts = records.filter((record): record is HostRecord => record.type === 'host')
  t.equal(hosts.length, 7)
  for (const host of hosts) {
    t.ok(host.memory.usage <= host.memory.size, `${host.name_label} is not overcommitted`)
  }
})

t.test('a 10,000-VM lab expands, writes and reopens', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'keel-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const spec = generateLabSpec({ vms: 10_000, hosts: 50 })

  const records = expandLab(spec, { creatorId: 'admin', now: NOW })
  const vms = records.filter((record): record is VmRecord => record.type === 'VM')
  t.equal(vms.length, 10_000)

  const db = openDatabase(dataDir)
  writeLab(db, records, NOW)
  const driver = new LabDriver(db, { creatorId: 'admin', clock: () => NOW })
  await driver.open()
  t.teardown(() => db.close())
  t.equal(driver.countOfType('VM'), 10_000)
  t.equal(driver.countOfType('host'), 50)
  t.same(
    [...driver.objectsOfType('VM')].map((vm) => vm.id),
    vms.map((vm) => vm.id),
    'every VM back, in order',
  )
  const sample = vms[4321] as VmRecord
  t.same(driver.getObject(sample.id), sample)
})
