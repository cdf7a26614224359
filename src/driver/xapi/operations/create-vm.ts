import { invalidParameters } from '../../../errors.js'
import { parseParams, type CreateVmParams } from '../../lab/operations/create-vm.js'
import type { OperationContext, XoRecord } from '../../types.js'
import type { XapiPool } from '../types.js'
import { CREATION_KEY, encodeCreation } from '../creation.js'
import { created, refOf, step, type Env, type Target, type XapiAction } from './context.js'
import { destroyersByType } from './destroy.js'
import { newVdiRecord } from '../new-vdi.js'

/**
 * A VM from a template, as the reference's vm.create makes one: the template
 * cloned, provisioned (its own disks) unless disks are asked for, made a VM,
 * then its settings, disks and VIFs, and booted if asked. Each XAPI step is
 * an `Async.*` task followed by the operation's. A VM that cannot be
 * finished (or booted) is destroyed with what it got: nothing is left half
 * made. What the request names is checked first, as the lab checks it.
 */

interface NewDisk {
  readonly name_label: string
  readonly name_description: string
  readonly size: number
  readonly sr: string
}

interface Plan {
  readonly template: string
  /** undefined: the template's own disks */
  readonly disks: readonly NewDisk[] | undefined
  readonly networks: ReadonlyArray<{ readonly ref: string; readonly mtu: number; readonly mac: string }>
}

const num = (value: unknown): number => (typeof value === 'number' ? value : 0)

function freeSpace(sr: XoRecord): number {
  return sr['size'] === null || sr['size'] === undefined ? Number.POSITIVE_INFINITY : num(sr['size']) - num(sr['physical_usage'])
}

function plan(env: Env, target: Target, params: CreateVmParams): Plan {
  const template = refOf(env, target, params.template, 'VM-template', 'body.template')
  const defaultSr = target.object['default_SR']
  const localHosts = new Set<unknown>()
  const disks = params.vdis?.map((disk, i): NewDisk => {
    const path = `body.vdis.${i}.sr`
    const srId = disk.sr ?? (typeof defaultSr === 'string' ? defaultSr : undefined)
    if (srId === undefined) throw invalidParameters([{ path, message: 'the pool has no default SR: name one' }])
    const sr = refOf(env, target, srId, 'SR', path)
    const record = env.index.getObject(srId)
    if (record?.['content_type'] === 'iso') throw invalidParameters([{ path, message: `SR ${srId} is an ISO library` }])
    if (record !== undefined && freeSpace(record) < disk.size) {
      throw invalidParameters([{ path: `body.vdis.${i}.size`, message: `SR ${srId} has ${freeSpace(record)} bytes free, the disk needs ${disk.size}` }])
    }
    if (record?.['shared'] === false) localHosts.add(record['$container'])
    return { name_label: disk.name_label, name_description: disk.name_description ?? 'Created by XO', size: disk.size, sr }
  })
  if (localHosts.size > 1) throw invalidParameters([{ path: 'body.vdis', message: 'the disks are on local SRs of different hosts: no host could start the VM' }])
  const networks = (params.vifs ?? []).map((vif, i) => ({
    ref: refOf(env, target, vif.network, 'network', `body.vifs.${i}.network`),
    mtu: num(env.index.getObject(vif.network)?.['MTU']) || 1500,
    mac: vif.mac?.toLowerCase() ?? '',
  }))
  return { template, disks, networks }
}

/** The description, CPUs and memory as asked: a maximum is raised before the CPU count, the count lowered before the maximum, so that XAPI's count <= maximum holds at each call. */
async function settings(pool: XapiPool, vm: string, params: CreateVmParams, signal: AbortSignal): Promise<void> {
  const options = { signal }
  // The clone has the template's description; the lab's VM has the one asked for, or none.
  await pool.call('VM.set_name_description', [vm, params.name_description ?? ''], options)
  if (params.cpus !== undefined) {
    const current = Number(await pool.call<number | string>('VM.get_VCPUs_at_startup', [vm], options))
    const calls: Array<[string, number]> = [['VM.set_VCPUs_max', params.cpus], ['VM.set_VCPUs_at_startup', params.cpus]]
    for (const [method, value] of params.cpus >= current ? calls : calls.reverse()) await pool.call(method, [vm, value], options)
  }
  if (params.memory !== undefined) {
    const staticMin = Math.min(Number(await pool.call<number | string>('VM.get_memory_static_min', [vm], options)), params.memory)
    await pool.call('VM.set_memory_limits', [vm, staticMin, params.memory, params.memory, params.memory], options)
  }
  if (params.auto_poweron === true) await pool.call('VM.add_to_other_config', [vm, 'auto_poweron', 'true'], options)
}

async function addDisks(pool: XapiPool, vm: string, disks: readonly NewDisk[], context: OperationContext): Promise<void> {
  for (const [position, disk] of disks.entries()) {
    const vdi = await pool.callAsync<string>('VDI.create', [newVdiRecord({ name_label: disk.name_label, name_description: disk.name_description, SR: disk.sr, virtual_size: disk.size })], {
      signal: context.signal,
    })
    await pool.callAsync('VBD.create', [
      {
        VM: vm,
        VDI: vdi,
        userdevice: String(position),
        bootable: position === 0,
        mode: 'RW',
        type: 'Disk',
        empty: false,
        unpluggable: true,
        other_config: {},
        qos_algorithm_type: '',
        qos_algorithm_params: {},
      },
    ], { signal: context.signal })
  }
}

async function addVifs(pool: XapiPool, vm: string, networks: Plan['networks'], signal: AbortSignal): Promise<void> {
  for (const [device, network] of networks.entries()) {
    await pool.callAsync('VIF.create', [
      {
        device: String(device),
        network: network.ref,
        VM: vm,
        MAC: network.mac,
        MTU: network.mtu,
        other_config: {},
        qos_algorithm_type: '',
        qos_algorithm_params: {},
        locking_mode: 'network_default',
        ipv4_allowed: [],
        ipv6_allowed: [],
      },
    ], { signal })
  }
}

/** What the clone became, finished: provisioned or given its disks, a VM, set up, booted if asked. */
async function finish(pool: XapiPool, vm: string, params: CreateVmParams, planned: Plan, context: OperationContext): Promise<void> {
  // Disks asked for replace the template's, as the lab has it: the provisioning spec goes, as the reference removes it.
  if (planned.disks === undefined) await pool.callAsync('VM.provision', [vm], step(context, 20, 50))
  else await pool.call('VM.remove_from_other_config', [vm, 'disks'], { signal: context.signal })
  await pool.call('VM.set_is_a_template', [vm, false], { signal: context.signal })
  // XAPI keeps no creator: Keel's record of it, read back by the mapping as the VM's `creation`.
  const creation = encodeCreation({ date: new Date().toISOString(), template: params.template, user: context.userId, creator: context.userId })
  await pool.call('VM.add_to_other_config', [vm, CREATION_KEY, creation], { signal: context.signal })
  await settings(pool, vm, params, context.signal)
  if (planned.disks !== undefined) await addDisks(pool, vm, planned.disks, context)
  context.progress(60)
  await addVifs(pool, vm, planned.networks, context.signal)
  context.progress(70)
  // start_paused and force false, as the reference starts a VM.
  if (params.boot === true) await pool.callAsync('VM.start', [vm, false, false], step(context, 70, 100))
}

export const createVm: XapiAction = async (env, target, rawParams, context) => {
  const params = parseParams(rawParams)
  const planned = plan(env, target, params)
  const { pool } = target
  const vm = await pool.callAsync<string>('VM.clone', [planned.template, params.name_label], step(context, 0, 20))
  try {
    await finish(pool, vm, params, planned, context)
  } catch (error) {
    // Not under the operation's signal: an aborted creation is taken back too.
    const cleanup = { signal: new AbortController().signal, userId: context.userId, progress: () => {} }
    await destroyersByType['VM']?.({ object: target.object, pool, ref: vm, cls: 'VM' }, cleanup, env).catch(() => undefined)
    throw error
  }
  return created(env, pool, 'VM', vm, 'VM')
}
