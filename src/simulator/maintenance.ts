import { labMissingPatches } from '../driver/lab/host-facts.js'
import type { Created, XoRecord } from '../driver/types.js'
import type { XmlRpcValue } from '../xapi/xml-rpc.js'
import { createdRef, failure, labObject, operationContext, text, withAsync } from './actions.js'
import type { Explicit } from './calls.js'
import type { CallContext, Handler } from './context.js'
import { operationNotAllowed, XapiFailure } from './failures.js'

/**
 * Host, SR and disk maintenance on the lab's actions, as XAPI names them:
 * host.restart_agent, PIF.scan, host.management_reconfigure, pool.eject,
 * host.destroy, VDI.pool_migrate, and host.call_plugin of the `trim` plugin
 * (how XAPI clients reclaim an SR's free space) and of XCP-ng's `updater.py`. Another plugin is missing,
 * as on a host without it.
 */

async function run(context: CallContext, object: XoRecord, cls: string, ref: string, action: string, params: Record<string, unknown> = {}): Promise<Created | undefined> {
  try {
    return await context.driver.perform(object, action, params, operationContext(context))
  } catch (error) {
    throw failure(error, ref, cls)
  }
}

const onHost =
  (action: string): Handler =>
  async (context, [ref]) => {
    await run(context, labObject(context, 'host', ref), 'host', text(ref), action)
    return ''
  }

async function managementReconfigure(context: CallContext, pifRef: XmlRpcValue | undefined): Promise<string> {
  const pif = labObject(context, 'PIF', pifRef)
  const host = context.driver.getObject(String(pif['$host']))
  if (host === undefined) throw operationNotAllowed('the PIF has no host')
  await run(context, host, 'PIF', text(pifRef), 'management_reconfigure', { pif: pif.id })
  return ''
}

/**
 * XCP-ng's updater plugin: `check_update` answers the updates the host
 * lacks as JSON (the lab's catalogue), `update` installs them, to take
 * effect at the next reboot.
 */
async function updater(context: CallContext, hostRef: XmlRpcValue | undefined, fn: string): Promise<string> {
  const host = labObject(context, 'host', hostRef)
  if (host['power_state'] !== 'Running') throw new XapiFailure('HOST_OFFLINE', text(hostRef))
  if (fn === 'check_update') return JSON.stringify(labMissingPatches(host))
  if (fn !== 'update') throw new XapiFailure('XENAPI_MISSING_PLUGIN', `updater.py ${fn}`)
  try {
    await context.driver.installPatches(host, operationContext(context))
  } catch (error) {
    throw failure(error, text(hostRef), 'host')
  }
  return ''
}

/** The trim plugin's answer to do_trim: "True", or an XML error description (XAPI's sm trim plugin); the updater plugin's answers. */
async function callPlugin(context: CallContext, [hostRef, plugin, fn, args]: readonly XmlRpcValue[]): Promise<string> {
  if (text(plugin) === 'updater.py') return updater(context, hostRef, text(fn))
  labObject(context, 'host', hostRef)
  if (text(plugin) !== 'trim' || text(fn) !== 'do_trim') throw new XapiFailure('XENAPI_MISSING_PLUGIN', text(plugin))
  const srUuid = typeof args === 'object' && args !== null && !Array.isArray(args) && !(args instanceof Date) ? (args as Record<string, XmlRpcValue>)['sr_uuid'] : undefined
  const sr = [...context.driver.objectsOfType('SR')].find((candidate) => candidate['uuid'] === srUuid)
  if (sr === undefined) throw new XapiFailure('UUID_INVALID', 'SR', text(srUuid ?? ''))
  await run(context, sr, 'SR', String(sr['_xapiRef']), 'reclaim_space')
  return 'True'
}

async function poolMigrate(context: CallContext, [vdiRef, srRef]: readonly XmlRpcValue[]): Promise<string> {
  const vdi = labObject(context, 'VDI', vdiRef)
  const sr = labObject(context, 'SR', srRef)
  return createdRef(context, await run(context, vdi, 'VDI', text(vdiRef), 'migrate', { srId: sr.id }))
}

export const maintenanceHandlers: Readonly<Record<string, Explicit>> = withAsync({
  'host.restart_agent': onHost('restart_toolstack'),
  'PIF.scan': onHost('scan_pifs'),
  'host.management_reconfigure': (context, [pif]) => managementReconfigure(context, pif),
  'pool.eject': onHost('detach'),
  'host.destroy': onHost('forget'),
  'host.call_plugin': (context, args) => callPlugin(context, args),
  'VDI.pool_migrate': (context, args) => poolMigrate(context, args),
})
