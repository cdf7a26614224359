import type { VmRecord, VmTemplateRecord } from '../../../model/records.js'
import { OS_PROFILES, type OsProfile } from '../catalog.js'
import type { Frozen, Plan } from './plan.js'

const words = (text: string): string[] => text.toLowerCase().split(/[^a-z0-9]+/).filter((word) => word !== '')

/**
 * The catalog profile a template was made from. Records do not name it, so
 * it is recognised by the traits the lab gives each profile's template; where
 * several profiles share them (Windows editions), the template's name decides.
 */
function profileOf(template: Frozen<VmTemplateRecord>): OsProfile | undefined {
  const family = template.other['linux_template'] === 'true' ? 'linux' : 'windows'
  const candidates = Object.values(OS_PROFILES).filter(
    (os) =>
      os.family === family &&
      os.firmware === template.boot['firmware'] &&
      (os.arch ?? '') === (template.other['install-arch'] ?? '') &&
      os.installMethods.join(',') === template.other['install-methods'],
  )
  const name = new Set(words(template.name_label))
  const score = (os: OsProfile): number => words(os.osVersion['name'] ?? '').filter((word) => name.has(word)).length
  return candidates.sort((a, b) => score(b) - score(a))[0]
}

/** What the guest agent of a VM reports once booted: the OS of the template it came from. */
export function guestOs(plan: Plan, vm: Frozen<VmRecord>): OsProfile | undefined {
  const byId = vm.creation?.template === undefined ? undefined : plan.find(vm.creation.template)
  const template =
    byId?.type === 'VM-template'
      ? plan.get(byId.id, 'VM-template')
      : plan.all('VM-template').find((t) => t.$pool === vm.$pool && t.name_label === vm.other['base_template_name'])
  return template === undefined ? undefined : profileOf(template)
}
