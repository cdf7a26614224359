import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { LabDriver, writeLab } from '../../src/driver/lab/driver.js'
import { expandLab } from '../../src/driver/lab/expand.js'
import { generateLabSpec } from '../../src/driver/lab/generate.js'
import { parseLabSpec } from '../../src/driver/lab/spec.js'
import type { XoRecord } from '../../src/driver/types.js'
import type { HostRecord, NetworkRecord, SrRecord, VbdRecord, VmRecord } from '../../src/model/records.js'
import { openDatabase } from '../../src/store/database.js'
import { linkProblems } from './fixtures/links.js'

const NOW = Date.UTC(2025, 0, 15, 12)

t.test('generated specs are valid, varied and reproducible', async (t) => {
  const spec = generateLabSpec({ vms: 500, hosts: 7 })
  t.doesNotThrow(() => parseLabSpec(JSON.parse(JSON.stringify(spec)), 'generated'), 'a valid lab description')
  const text = JSON.stringify(spec)
  t.equal(JSON.stringify(generateLabSpec({ vms: 500, hosts: 7 })), text, 'same options, same spec')
  t.not(JSON.stringify(generateLabSpec({ vms: 500, hosts: 7, seed: 2 })), text, 'the seed matters')
  t.equal(spec.pools.length, 1, 'a small lab is one pool')
  const pool = spec.pools[0]
  t.equal(pool?.hosts.length, 7)
  t.equal(pool?.vms.length, 500)
  t.same([...new Set(pool?.vms.map((vm) => vm.power))].sort(), ['Halted', 'Paused', 'Running', 'Suspended'])
  for (const vm of pool?.vms ?? []) {
    if (vm.disks.length < 1 || vm.disks.length > 3 || vm.networks.length < 1 || vm.networks.length > 2) {
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

t.test('a large lab is several pools of at most 64 hosts, each complete and self-contained', async (t) => {
  const spec = generateLabSpec({ vms: 3000, hosts: 150 })
  t.ok(spec.pools.length > 2, `${spec.pools.length} pools`)
  t.equal(spec.pools.reduce((sum, pool) => sum + pool.hosts.length, 0), 150, 'every host in a pool')
  t.equal(spec.pools.reduce((sum, pool) => sum + pool.vms.length, 0), 3000, 'every VM in a pool')
  for (const pool of spec.pools) {
    if (pool.hosts.length > 64) t.fail(`${pool.name}: ${pool.hosts.length} hosts`)
    // VMs in proportion to hosts: 20 per host, give or take the rounding
    if (Math.abs(pool.vms.length - 20 * pool.hosts.length) > 1) t.fail(`${pool.name}: ${pool.vms.length} VMs on ${pool.hosts.length} hosts`)
  }
  const names = spec.pools.flatMap((pool) => [...pool.hosts, ...pool.vms].map((object) => object.name))
  t.equal(new Set(names).size, names.length, 'host and VM names unique across pools')

  const records = expandLab(spec, { creatorId: 'admin', now: NOW })
  t.same(linkProblems(records), [])
  const byId = new Map(records.map((record) => [record.id, record]))
  const ofType = <T extends XoRecord>(type: string): T[] => records.filter((record) => record.type === type) as T[]
  const pools = ofType('pool')
  t.equal(pools.length, spec.pools.length)
  t.equal(ofType('VM').length, 3000)
  t.equal(ofType('host').length, 150)
  for (const pool of pools) {
    const inPool = <T extends XoRecord>(type: string): T[] => ofType<T>(type).filter((record) => record.$pool === pool.id)
    const hosts = inPool<HostRecord>('host')
    const srs = inPool<SrRecord>('SR')
    const shared = srs.filter((sr) => sr.shared).map((sr) => sr.SR_type).sort()
    t.same(shared, ['iso', 'lvmoiscsi', 'nfs'], `${pool.id}: NFS, iSCSI and ISO shared SRs`)
    t.equal(srs.filter((sr) => !sr.shared).length, hosts.length, `${pool.id}: a local SR per host`)
    const networks = inPool<NetworkRecord>('network')
    t.equal(networks.length, 4)
    for (const network of networks) t.equal(network.PIFs.length, hosts.length, `${network.name_label}: a PIF per host`)
    const hostIds = new Set(hosts.map((host) => host.id))
    const srIds = new Set(srs.map((sr) => sr.id))
    for (const vm of inPool<VmRecord>('VM')) {
      if (vm.power_state !== 'Halted' && !hostIds.has(vm.$container)) t.fail(`${vm.name_label} runs outside its pool`)
      const disks = vm.$VBDs
        .map((id) => byId.get(id) as VbdRecord)
        .filter((vbd) => !vbd.is_cd_drive)
        .map((vbd) => byId.get(vbd.VDI ?? ''))
      if (disks.length < 1 || disks.length > 3) t.fail(`${vm.name_label}: ${disks.length} disks`)
      for (const disk of disks) if (!srIds.has(String(disk?.$SR))) t.fail(`${vm.name_label}: a disk outside its pool`)
    }
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
