import { incorrectState, invalidParameters } from '../../../errors.js'
import type { Created } from '../../types.js'
import { createVm } from './create-vm.js'
import type { Plan } from './plan.js'
import { preview, Run, type Operation } from './run.js'

/** What XAPI's VM.create sets of a VM the lab models; the other settings come from a template of the pool. */
export interface BlankVm {
  readonly name_label: string
  readonly name_description: string
  readonly cpus: { readonly max: number; readonly atStartup: number }
  /** bytes */
  readonly memory: { readonly staticMin: number; readonly staticMax: number; readonly dynamicMin: number; readonly dynamicMax: number }
  /** HVM_boot_policy set: an HVM guest, else PV */
  readonly hvm: boolean
  readonly PV_args: string
  readonly other_config: Readonly<Record<string, string>>
}

function checkFields(vm: BlankVm): void {
  const { staticMin, staticMax, dynamicMin, dynamicMax } = vm.memory
  // XAPI's constraint: static_min <= dynamic_min <= dynamic_max <= static_max.
  if (!(staticMin <= dynamicMin && dynamicMin <= dynamicMax && dynamicMax <= staticMax) || dynamicMax < 1) {
    throw invalidParameters([{ path: 'body.memory', message: 'needs static_min <= dynamic_min <= dynamic_max <= static_max' }])
  }
  if (vm.cpus.atStartup < 1 || vm.cpus.atStartup > vm.cpus.max) throw invalidParameters([{ path: 'body.VCPUs_at_startup', message: 'must be between 1 and VCPUs_max' }])
}

function blankVm(plan: Plan, poolId: string, fields: BlankVm, userId: string, now: number): string {
  checkFields(fields)
  const template = plan.all('VM-template').find((candidate) => candidate.$pool === poolId)
  if (template === undefined) throw incorrectState({ actual: 0, expected: 1, object: poolId, property: 'templates' })
  const id = createVm(plan, poolId, { name_label: fields.name_label, template: template.id, cpus: fields.cpus.max, vdis: [] }, userId, now)
  const vm = plan.edit(id, 'VM')
  vm.name_description = fields.name_description
  vm.CPUs = { max: fields.cpus.max, number: fields.cpus.atStartup }
  vm.memory = { dynamic: [fields.memory.dynamicMin, fields.memory.dynamicMax], static: [fields.memory.staticMin, fields.memory.staticMax], size: fields.memory.dynamicMax }
  vm.virtualizationMode = fields.hvm ? 'hvm' : 'pv'
  if (fields.hvm) delete vm.PV_args
  else vm.PV_args = fields.PV_args
  vm.other = { ...fields.other_config }
  // Made from fields, not from the template lent for the rest of its settings.
  delete vm.creation?.template
  return id
}

/** XAPI's VM.create: a halted VM with no devices, in one step. */
export async function createBlankVm(op: Operation, poolId: string, fields: BlankVm): Promise<Created> {
  preview(op.env, (plan) => blankVm(plan, poolId, fields, op.userId, op.env.clock()))
  return { id: await new Run(op, 1).apply((plan) => blankVm(plan, poolId, fields, op.userId, op.env.clock())), type: 'VM' }
}
