import type { XoRecord } from '../driver/types.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import { actionHandlers, createdRef, failure, labObject, operationContext, text, withAsync } from './actions.js'
import type { Explicit } from './calls.js'
import type { CallContext, Handler } from './context.js'
import { operationNotAllowed, vmBadPowerState, XapiFailure } from './failures.js'

/**
 * A VM made from a template as XAPI clients make one: VM.clone of the
 * template, then VM.provision for the template's disks. The lab has no
 * template that turns into a VM, so the clone of a template is at once a
 * halted VM with no disk (the lab's create_vm, the template recorded as its
 * origin); VM.set_is_a_template(false) then changes nothing, and
 * VM.provision gives it the template's disks, once.
 */

const cloneVm = actionHandlers['VM.clone']?.handler

async function cloneTemplate(context: CallContext, template: XoRecord, ref: string, name: string): Promise<string> {
  const pool = context.driver.getObject(String(template['$pool']))
  if (pool === undefined) throw operationNotAllowed('the template has no pool')
  try {
    return createdRef(context, await context.driver.perform(pool, 'create_vm', { name_label: name, template: template.id, vdis: [] }, operationContext(context)))
  } catch (error) {
    throw failure(error, ref, 'VM')
  }
}

const clone: Handler = async (context, args) => {
  const [ref, name] = args
  const source = labObject(context, 'VM', ref)
  if (source.type === 'VM-template') return cloneTemplate(context, source, text(ref), text(name))
  if (cloneVm === undefined) throw new XapiFailure('INTERNAL_ERROR', 'VM.clone is not served')
  return cloneVm(context, args)
}

interface TemplateDisk {
  readonly size: number
  readonly SR: string
  readonly bootable: boolean
}

/** The disks the VM's template gives, none once the VM has a disk (XAPI provisions from a spec it then drops). */
function disksToProvision(context: CallContext, vm: XoRecord): readonly TemplateDisk[] {
  const vbds = Array.isArray(vm['$VBDs']) ? vm['$VBDs'] : []
  if (vbds.some((id) => context.driver.getObject(String(id))?.['is_cd_drive'] === false)) return []
  const creation = vm['creation']
  const templateId = typeof creation === 'object' && creation !== null ? (creation as Record<string, unknown>)['template'] : undefined
  const template = typeof templateId === 'string' ? context.driver.getObject(templateId) : undefined
  const info = template?.['template_info']
  const disks = typeof info === 'object' && info !== null ? (info as Record<string, unknown>)['disks'] : undefined
  return Array.isArray(disks) ? (disks as TemplateDisk[]) : []
}

async function provision(context: CallContext, ref: XmlRpcValue | undefined): Promise<string> {
  const vm = labObject(context, 'VM', ref)
  if (vm.type !== 'VM') throw operationNotAllowed('the lab provisions VMs only')
  if (vm['power_state'] !== 'Halted') throw vmBadPowerState(text(ref), 'halted', String(vm['power_state']))
  const disks = disksToProvision(context, vm)
  const defaultSr = context.driver.getObject(String(vm['$pool']))?.['default_SR']
  try {
    for (const [position, disk] of disks.entries()) {
      const srId = disk.SR === '' ? defaultSr : disk.SR
      if (typeof srId !== 'string') throw new XapiFailure('SR_NOT_FOUND', '')
      const vdi = await context.driver.create('VDI', { srId, name_label: `${String(vm['name_label'])} disk ${position}`, virtual_size: disk.size }, operationContext(context))
      await context.driver.create('VBD', { VM: vm.id, VDI: vdi.id, userdevice: String(position), bootable: disk.bootable }, operationContext(context))
      context.progress((position + 1) / disks.length)
    }
  } catch (error) {
    throw failure(error, text(ref), 'VM')
  }
  return ''
}

export const instantiationHandlers: Readonly<Record<string, Explicit>> = withAsync({
  'VM.clone': clone,
  'VM.provision': (context, [ref]) => provision(context, ref),
})
