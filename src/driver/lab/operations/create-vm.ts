import type { Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { invalidParameters, noSuchObject, type KeelError } from '../../../errors.js'
import { CreateVmParams as CreateVmParamsSchema } from '../../../model/operations.js'
import type { SrRecord, VmRecord, VmTemplateRecord } from '../../../model/records.js'
import { GUEST_BIOS_STRINGS } from '../catalog.js'
import { vmLinkDefaults } from '../record-defaults.js'
import { addVbd, addVdi, addVif, identity, randomMac } from './builders.js'
import { clearRuntime, haltedContainer, localHosts, seconds } from './guest.js'
import type { ActionHandler, Params } from './params.js'
import type { Frozen, Plan } from './plan.js'
import { runTransition, transit, transitionSteps } from './power.js'
import { preview, Run } from './run.js'
import { freeSpace } from './sr-usage.js'

export type CreateVmParams = Static<typeof CreateVmParamsSchema>

/** The REST layer has validated them; this keeps a direct caller from getting past with a wrong shape. */
export function parseParams(params: Params): CreateVmParams {
  if (Value.Check(CreateVmParamsSchema, params)) return params
  throw invalidParameters(
    [...Value.Errors(CreateVmParamsSchema, params)].slice(0, 10).map((error) => ({ path: `body${error.path.replaceAll('/', '.')}`, message: error.message })),
  )
}

interface DiskPlan {
  readonly name_label: string
  readonly name_description: string
  readonly size: number
  readonly sr: string
  /** where the request gave its SR and size, for errors */
  readonly srPath: string
  readonly sizePath: string
}

/** The disks asked for, or else the template's, each on its SR or the pool's default SR. */
function diskPlans(plan: Plan, poolId: string, template: Frozen<VmTemplateRecord>, params: CreateVmParams): DiskPlan[] {
  const defaultSr = plan.get(poolId, 'pool').default_SR
  const pick = (sr: string | undefined, path: string): string => {
    const chosen = sr === undefined || sr === '' ? defaultSr : sr
    if (chosen === undefined) throw invalidParameters([{ path, message: 'the pool has no default SR: name one' }])
    return chosen
  }
  if (params.vdis !== undefined) {
    return params.vdis.map((disk, i) => ({
      name_label: disk.name_label,
      name_description: disk.name_description ?? 'Created by XO',
      size: disk.size,
      sr: pick(disk.sr, `body.vdis.${i}.sr`),
      srPath: `body.vdis.${i}.sr`,
      sizePath: `body.vdis.${i}.size`,
    }))
  }
  return template.template_info.disks.map((disk, i) => ({
    name_label: `${params.name_label} disk ${i}`,
    name_description: 'Created by XO',
    size: disk.size,
    sr: pick(disk.SR, 'body.template'),
    srPath: 'body.template',
    sizePath: 'body.template',
  }))
}

/** A new disk's SR must exist in the pool, hold VM disks and have room for the whole disk. */
function checkSr(plan: Plan, poolId: string, disk: DiskPlan): Frozen<SrRecord> {
  const sr = plan.find(disk.sr)?.type === 'SR' ? plan.get(disk.sr, 'SR') : undefined
  if (sr === undefined) throw noSuchObject(disk.sr, 'SR')
  const problem = (path: string, message: string): KeelError => invalidParameters([{ path, message }])
  if (sr.$pool !== poolId) throw problem(disk.srPath, `SR ${sr.id} is not in pool ${poolId}`)
  if (sr.content_type === 'iso') throw problem(disk.srPath, `SR ${sr.id} is an ISO library`)
  if (freeSpace(sr) < disk.size) throw problem(disk.sizePath, `SR ${sr.id} has ${freeSpace(sr)} bytes free, the disk needs ${disk.size}`)
  return sr
}

/**
 * A halted VM from a template: its settings, the template's or the requested
 * CPUs and memory, its disks and its VIFs. Returns the new VM's id. New disks
 * take the ids in `diskIds` (by position) when their content was made first.
 */
export function createVm(plan: Plan, poolId: string, params: CreateVmParams, userId: string, now: number, diskIds: readonly string[] = []): string {
  const template = plan.get(params.template, 'VM-template')
  if (template.$pool !== poolId) throw invalidParameters([{ path: 'body.template', message: `template ${template.id} is not in pool ${poolId}` }])
  const disks = diskPlans(plan, poolId, template, params)
  const srs = disks.map((disk) => checkSr(plan, poolId, disk))
  if (localHosts(plan, srs.map((sr) => sr.id)).size > 1) {
    throw invalidParameters([{ path: 'body.vdis', message: 'the disks are on local SRs of different hosts: no host could start the VM' }])
  }
  const networks = (params.vifs ?? []).map((vif, i) => {
    const network = plan.find(vif.network)?.type === 'network' ? plan.get(vif.network, 'network') : undefined
    if (network === undefined) throw noSuchObject(vif.network, 'network')
    if (network.$pool !== poolId) throw invalidParameters([{ path: `body.vifs.${i}.network`, message: `network ${network.id} is not in pool ${poolId}` }])
    return network
  })

  const { isDefaultTemplate: _default, template_info: _info, ...settings } = structuredClone(template) as VmTemplateRecord
  clearRuntime(settings)
  const base = identity(poolId)
  const cpus = params.cpus ?? template.CPUs.max
  const memory = params.memory ?? template.memory.size
  const autoPoweron = params.auto_poweron ?? false
  const vm = plan.add<VmRecord>({
    ...settings,
    type: 'VM',
    ...base,
    name_label: params.name_label,
    name_description: params.name_description ?? '',
    tags: [],
    other: { base_template_name: template.name_label, ...(autoPoweron ? { auto_poweron: 'true' } : {}) },
    creation: { date: new Date(now).toISOString(), template: template.id, user: userId, creator: userId },
    power_state: 'Halted',
    current_operations: {},
    auto_poweron: autoPoweron,
    installTime: seconds(now),
    CPUs: { max: cpus, number: cpus },
    memory: { dynamic: [memory, memory], static: [Math.min(template.memory.static[0] ?? memory, memory), memory], size: memory },
    bios_strings: { ...GUEST_BIOS_STRINGS, 'system-serial-number': base.uuid },
    os_version: null,
    ...vmLinkDefaults(),
    vulnerabilities: { xsa468: false },
    $container: poolId,
  })
  disks.forEach((disk, position) => {
    const id = diskIds[position]
    const vdi = addVdi(plan, { sr: disk.sr, poolId, name_label: disk.name_label, name_description: disk.name_description, size: disk.size, ...(id === undefined ? {} : { id }) })
    addVbd(plan, { vm, position, vdi: vdi.id, attached: false })
  })
  networks.forEach((network, device) => {
    addVif(plan, { vm, device: String(device), network: network.id, mac: params.vifs?.[device]?.mac?.toLowerCase() ?? randomMac(), attached: false })
  })
  plan.edit(vm.id, 'VM').$container = haltedContainer(plan, vm)
  return vm.id
}

/** Steps before a created VM shows. */
const CREATE_WAITS = 1

export const createVmAction: ActionHandler = async (op, object, rawParams) => {
  const params = parseParams(rawParams)
  const boot = params.boot === true
  // A VM that could not boot is refused before it is created.
  preview(op.env, (plan) => {
    const id = createVm(plan, object.id, params, op.userId, op.env.clock())
    if (boot) transit(plan, id, 'start', {}, op.env.clock())
  })
  const run = new Run(op, CREATE_WAITS + 1 + (boot ? transitionSteps('start') : 0))
  await run.wait(CREATE_WAITS)
  const id = await run.apply((plan) => createVm(plan, object.id, params, op.userId, op.env.clock()))
  if (boot) await runTransition(run, op.env.clock, id, 'start')
  return { id, type: 'VM' }
}
