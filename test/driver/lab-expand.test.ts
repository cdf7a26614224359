import t from 'tap'
import type { XoRecord } from '../../src/driver/types.js'
import { DEMO_LAB_FILE } from '../../src/driver/lab/driver.js'
import { expandLab } from '../../src/driver/lab/expand.js'
import { loadLabSpec, type LabSpec } from '../../src/driver/lab/spec.js'
import type { HostRecord, VbdRecord, VmControllerRecord, VmRecord } from '../../src/model/records.js'
import { linkProblems } from './fixtures/links.js'

const NOW = Date.UTC(2025, 0, 15, 12)
const CREATOR = '2a4e1b0c-5d6f-4a7b-8c9d-0e1f2a3b4c5d'
const spec = loadLabSpec(DEMO_LAB_FILE)
const records = expandLab(spec, { creatorId: CREATOR, now: NOW })
const byId = new Map(records.map((record) => [record.id, record]))
/** Every record of a type; never empty, so that a loop over it always asserts something. */
function ofType<T = XoRecord>(type: string): T[] {
  const found = records.filter((record) => record.type === type)
  if (found.length === 0) throw new Error(`the demo lab has no ${type}`)
  return found as T[]
}
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

t.test('the demo lab has the promised objects', async (t) => {
  const counts: Record<string, number> = {}
  for (const record of records) counts[record.type] = (counts[record.type] ?? 0) + 1
  t.same(counts, {
    pool: 1,
    host: 3,
    'VM-controller': 3,
    network: 2,
    PIF: 6,
    SM: 4,
    SR: 5,
    PBD: 3 * 2 + 3, // the NFS and ISO SRs on every host, one local SR each
    VDI: 15 + 3, // 15 VM disks, 3 ISOs
    'VM-template': 6,
    VM: 12,
    VBD: 15 + 4 + 3, // VM disks, CD drives, snapshot disks
    VIF: 13 + 2, // 13 VM VIFs, copied into the 2 snapshots
    'VM-snapshot': 2,
    'VDI-snapshot': 3,
    message: 6,
    gpuGroup: 1,
  })
  const pool = ofType('pool')[0]
  const master = byId.get(String(pool?.['master']))
  t.equal(master?.['name_label'], 'xcp-ng-01')
  t.equal(new Set(ofType<VmRecord>('VM').map((vm) => vm.power_state)).size, 4, 'all four power states')
  t.equal(ofType('message').filter((message) => message['name'] === 'ALARM').length, 3)
})

t.test('every link resolves to an object of the right type', async (t) => {
  t.same(linkProblems(records), [])
})

t.test('links agree in both directions', async (t) => {
  const has = (id: unknown, field: string, member: string): boolean =>
    (byId.get(String(id))?.[field] as string[] | undefined)?.includes(member) === true
  for (const vbd of ofType<VbdRecord>('VBD')) {
    t.ok(has(vbd.VM, '$VBDs', vbd.id), `VBD ${vbd.id} in its VM`)
    if (vbd.VDI !== undefined) t.ok(has(vbd.VDI, '$VBDs', vbd.id), `VBD ${vbd.id} in its VDI`)
  }
  for (const vif of ofType('VIF')) {
    t.ok(has(vif['$VM'], 'VIFs', vif.id))
    t.ok(has(vif['$network'], 'VIFs', vif.id))
  }
  for (const pif of ofType('PIF')) {
    t.ok(has(pif['$host'], 'PIFs', pif.id))
    t.ok(has(pif['$network'], 'PIFs', pif.id))
  }
  for (const pbd of ofType('PBD')) {
    t.ok(has(pbd['host'], '$PBDs', pbd.id))
    t.ok(has(pbd['SR'], '$PBDs', pbd.id))
  }
  for (const vdi of [...ofType('VDI'), ...ofType('VDI-snapshot')]) t.ok(has(vdi['$SR'], 'VDIs', vdi.id))
  for (const snapshot of [...ofType('VM-snapshot'), ...ofType('VDI-snapshot')]) {
    t.ok(has(snapshot['$snapshot_of'], 'snapshots', snapshot.id))
  }
  for (const host of ofType<HostRecord>('host')) {
    t.equal(byId.get(host.controlDomain ?? '')?.['$container'], host.id, 'dom0 lives on its host')
    for (const id of host.residentVms) t.equal(byId.get(id)?.['$container'], host.id)
  }
})

const hostByName = (name: string): HostRecord | undefined =>
  ofType<HostRecord>('host').find((host) => host.name_label === name)
const isResident = (hostId: string, vmId: string): boolean =>
  (byId.get(hostId) as HostRecord | undefined)?.residentVms.includes(vmId) === true
/** The host of the first local SR among a VM's disks. */
const localDiskHost = (vm: VmRecord): unknown =>
  vm.$VBDs
    .map((id) => byId.get(String(byId.get(id)?.['VDI'])))
    .map((vdi) => byId.get(String(vdi?.['$SR'])))
    .find((sr) => sr?.['shared'] === false)?.['$container']

t.test('containers follow the power state', async (t) => {
  const pool = ofType('pool')[0]
  const hostIds = new Set(ofType('host').map((host) => host.id))
  for (const vm of ofType<VmRecord>('VM')) {
    if (vm.power_state === 'Halted') {
      t.equal(vm.$container, localDiskHost(vm) ?? pool?.id, `halted ${vm.name_label}: the pool, or its local SR's host`)
    } else {
      t.ok(hostIds.has(vm.$container), `${vm.name_label} (${vm.power_state}) is on a host`)
      t.ok(isResident(vm.$container, vm.id), `${vm.name_label} is resident`)
    }
  }
  const sandbox = ofType<VmRecord>('VM').find((vm) => vm.name_label === 'dev-sandbox')
  t.equal(sandbox?.$container, hostByName('xcp-ng-02')?.id, 'a halted VM on local storage stays with its host')
})

t.test('guest state is plausible', async (t) => {
  for (const vm of ofType<VmRecord>('VM')) {
    const running = vm.power_state === 'Running'
    t.equal(Object.keys(vm.addresses).length > 0, running, `${vm.name_label}: addresses only when running`)
    if (running) {
      t.match(vm.addresses['0/ipv4/0'], /^10\.0\.[01]\.\d+$/)
      t.equal(vm.mainIpAddress, vm.addresses['0/ipv4/0'])
    }
    const live = running || vm.power_state === 'Paused'
    t.equal(typeof vm.startTime === 'number', live, `${vm.name_label}: startTime only when live`)
    if (typeof vm.startTime === 'number') t.ok(vm.startTime < NOW / 1000 && vm.startTime > NOW / 1000 - 365 * 86400, 'in seconds')
    t.equal(vm.os_version === null, vm.power_state === 'Halted')
    t.same(vm.creation, { ...vm.creation, user: CREATOR, creator: CREATOR })
    t.equal(byId.get(vm.creation?.template ?? '')?.type, 'VM-template')
  }
  for (const snapshot of ofType('VM-snapshot')) {
    t.ok(Number.isInteger(snapshot['snapshot_time']) && (snapshot['snapshot_time'] as number) < NOW / 1000)
  }
  const sizes = new Map(ofType<VmRecord>('VM').map((vm) => [vm.id, vm.memory.size]))
  for (const host of ofType<HostRecord>('host')) {
    const dom0 = byId.get(host.controlDomain ?? '') as VmControllerRecord
    const guests = host.residentVms
      .map((id) => byId.get(id) as VmRecord)
      .filter((vm) => vm.power_state === 'Running' || vm.power_state === 'Paused')
    const expected = dom0.memory.size + guests.reduce((sum, vm) => sum + (sizes.get(vm.id) ?? 0), 0)
    t.equal(host.memory.usage, expected, `${host.name_label}: memory of dom0 and its live VMs`)
    t.ok(host.memory.usage < host.memory.size)
  }
})

t.test('ids and references have XO shapes', async (t) => {
  const pool = ofType('pool')[0]
  for (const record of records) {
    t.match(record['uuid'], UUID_V4)
    t.equal(record['_xapiRef'], `OpaqueRef:${String(record['uuid'])}`)
    if (record['isDefaultTemplate'] === true) t.equal(record.id, `${pool?.id}-${String(record['uuid'])}`)
    else t.equal(record.id, record['uuid'])
  }
  t.equal(ofType('VM-template').filter((template) => template['isDefaultTemplate'] === false).length, 1)
})

t.test('ids are deterministic for a spec and seed', async (t) => {
  const ids = (lab: XoRecord[]): string[] => lab.map((record) => record.id)
  t.same(expandLab(spec, { creatorId: CREATOR, now: NOW }), records, 'same spec, seed and clock: same records')
  t.same(ids(expandLab(spec, { creatorId: 'someone', now: NOW + 3_600_000, seed: 1 })), ids(records), 'the default seed is 1')
  const reseeded = ids(expandLab(spec, { creatorId: CREATOR, now: NOW, seed: 2 }))
  t.equal(reseeded.filter((id) => byId.has(id)).length, 0, 'another seed, other ids')

  const grown: LabSpec = structuredClone(spec)
  const pool = grown.pools[0]
  if (pool === undefined) throw new Error('no pool')
  pool.vms.unshift({ name: 'new-vm', template: 'Debian Bookworm 12', power: 'Halted', cpus: 1, memory: '1 GiB', disks: [], networks: [] })
  const grownIds = new Set(ids(expandLab(grown, { creatorId: CREATOR, now: NOW })))
  t.ok(
    ids(records).every((id) => grownIds.has(id)),
    'adding an object leaves the ids of the others alone',
  )
})

t.test('the demo ids that docs and HTTP tests quote do not move', async (t) => {
  const named = (type: string, name: string): string | undefined =>
    ofType(type).find((record) => record['name_label'] === name)?.id
  t.equal(ofType('pool')[0]?.id, '00ae6e8b-ddef-41b0-94b6-97124b2d6e63')
  t.equal(named('host', 'xcp-ng-01'), '584d2b80-466d-47d0-b653-93212fcf0256')
  t.equal(named('host', 'xcp-ng-02'), '5b58252d-bd00-452e-ab71-c6cd65bfc8da')
  t.equal(named('host', 'xcp-ng-03'), '358ec160-c443-45cb-8089-977c0c9d116e')
  t.equal(named('VM', 'web-01'), '77a24872-31be-4503-b540-0908da76e3dd')
  t.equal(named('VM', 'staging-app'), '40def2d2-8f4a-44c1-879a-bae013aea30e')
  t.equal(named('SR', 'NFS shared storage'), 'd6b802dc-85d6-409e-a048-690abe38970d')
  t.equal(
    named('VM-template', 'Debian Bookworm 12'),
    '00ae6e8b-ddef-41b0-94b6-97124b2d6e63-ed5c6439-02ce-4122-a098-acad29cd6636',
  )
})

t.test('spec mistakes are reported with their place', async (t) => {
  const broken = (edit: (spec: LabSpec) => void): (() => XoRecord[]) => {
    const copy: LabSpec = structuredClone(spec)
    edit(copy)
    return () => expandLab(copy, { creatorId: CREATOR, now: NOW })
  }
  const firstVm = (lab: LabSpec) => {
    const vm = lab.pools[0]?.vms[0]
    if (vm === undefined) throw new Error('no VM')
    return vm
  }
  t.throws(broken((lab) => void (firstVm(lab).disks[0] = { size: 1, sr: 'nope' })), /unknown SR "nope" in disk 0 of VM "web-01"/)
  t.throws(broken((lab) => void (firstVm(lab).power = 'Halted')), /needs a host exactly when it is not Halted/)
  t.throws(
    broken((lab) => void (firstVm(lab).disks = [{ size: 1, sr: 'Local storage (xcp-ng-02)' }])),
    /local SRs it cannot reach/,
  )
  t.throws(broken((lab) => lab.pools[0]?.vms.push({ ...firstVm(lab) })), /two objects with id/)
})
