import { isKeelError } from '../errors.js'
import type { XmlRpcStruct, XmlRpcValue } from '../xapi/xml-rpc.js'
import { createdRef, failure, labObject, operationContext, text, withAsync } from './actions.js'
import type { Explicit } from './calls.js'
import type { CallContext, Handler } from './context.js'
import { XapiFailure } from './failures.js'

/**
 * An SR's life on the lab's operations, as XAPI names it (xapi_sr.ml,
 * xapi_pbd.ml): SR.create through a host, SR.destroy and SR.forget refused
 * while one of its PBDs is plugged (SR_HAS_PBD [sr]), PBD.plug and
 * PBD.unplug (the lab's refusals, a VM running there on the SR's disks, as
 * OPERATION_NOT_ALLOWED). An SR type the pool has no driver for is
 * SR_UNKNOWN_DRIVER [type]; a device setting the driver does not know, or
 * content of another kind than the driver's, is the driver's refusal
 * (SR_BACKEND_FAILURE).
 */

const stringMap = (value: XmlRpcValue | undefined): Record<string, string> =>
  value !== undefined && typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
    ? Object.fromEntries(Object.entries(value as XmlRpcStruct).map(([key, entry]) => [key, text(entry)]))
    : {}

/** The first path a lab INVALID_PARAMETERS names, or ''. */
const invalidPath = (error: unknown): string => {
  const errors = isKeelError(error) && error.code === 'INVALID_PARAMETERS' ? error.data?.['errors'] : undefined
  return Array.isArray(errors) ? String((errors[0] as { path?: unknown } | undefined)?.path) : ''
}

async function createSr(context: CallContext, args: readonly XmlRpcValue[]): Promise<string> {
  const [hostRef, deviceConfig, size, name, description, type, contentType, , smConfig] = args
  const host = labObject(context, 'host', hostRef)
  const params = {
    hostId: host.id,
    name_label: text(name ?? ''),
    name_description: text(description ?? ''),
    SR_type: text(type ?? ''),
    device_config: stringMap(deviceConfig),
    sm_config: stringMap(smConfig),
    // XAPI clients send 0 and '' for "the device's size" and "the driver's content".
    ...(typeof size === 'number' && size > 0 ? { size } : {}),
    ...(text(contentType ?? '') === '' ? {} : { content_type: text(contentType) }),
  }
  try {
    return createdRef(context, await context.driver.create('SR', params, operationContext(context)))
  } catch (error) {
    const path = invalidPath(error)
    if (path === 'body.SR_type') throw new XapiFailure('SR_UNKNOWN_DRIVER', params.SR_type)
    if (path !== '') throw new XapiFailure('SR_BACKEND_FAILURE', 'SRInvalidArgument', '', isKeelError(error) ? error.message : String(error))
    throw failure(error, text(hostRef), 'host')
  }
}

/** XAPI's check before an SR leaves: none of its PBDs plugged. */
function requireUnplugged(context: CallContext, ref: string): void {
  const pbds = context.db.expect('SR', ref).record['PBDs']
  const plugged = (Array.isArray(pbds) ? pbds : []).some((pbd) => context.db.get(text(pbd))?.record['currently_attached'] === true)
  if (plugged) throw new XapiFailure('SR_HAS_PBD', ref)
}

const leaving =
  (how: 'destroy' | 'forget'): Handler =>
  async (context, [ref]) => {
    const sr = labObject(context, 'SR', ref)
    requireUnplugged(context, text(ref))
    try {
      if (how === 'destroy') await context.driver.destroy(sr, operationContext(context))
      else await context.driver.perform(sr, 'forget', {}, operationContext(context))
    } catch (error) {
      throw failure(error, text(ref), 'SR')
    }
    return ''
  }

const plugging =
  (action: 'plug' | 'unplug'): Handler =>
  async (context, [ref]) => {
    const pbd = labObject(context, 'PBD', ref)
    // XAPI plugs a plugged PBD, and unplugs an unplugged one, as a no-op.
    if (pbd['attached'] === (action === 'plug')) return ''
    try {
      await context.driver.perform(pbd, action, {}, operationContext(context))
    } catch (error) {
      throw failure(error, text(ref), 'PBD')
    }
    return ''
  }

export const storageHandlers: Readonly<Record<string, Explicit>> = withAsync({
  'SR.create': (context, args) => createSr(context, args),
  'SR.destroy': leaving('destroy'),
  'SR.forget': leaving('forget'),
  'PBD.plug': plugging('plug'),
  'PBD.unplug': plugging('unplug'),
})
