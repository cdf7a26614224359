import type { XmlRpcStruct } from '../xapi/xml-rpc.js'
import { createdRef, failure, labObject, operationContext, text, withAsync } from './actions.js'
import type { Explicit } from './calls.js'
import type { CallContext } from './context.js'
import { operationNotAllowed, XapiFailure } from './failures.js'

const refs = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : [])

/**
 * network.destroy as XAPI's (xapi_network.ml): refused while a VIF on it is
 * plugged (NETWORK_CONTAINS_VIF [vifs]) or a PIF is on it
 * (NETWORK_CONTAINS_PIF [pifs]); the unplugged VIFs go with the network.
 */
async function destroyNetwork(context: CallContext, ref: string): Promise<string> {
  const network = labObject(context, 'network', ref)
  const record = context.db.expect('network', ref).record
  const plugged = refs(record['VIFs']).filter((vif) => context.db.get(vif)?.record['currently_attached'] === true)
  if (plugged.length > 0) throw new XapiFailure('NETWORK_CONTAINS_VIF', ...plugged)
  const pifs = refs(record['PIFs'])
  if (pifs.length > 0) throw new XapiFailure('NETWORK_CONTAINS_PIF', ...pifs)
  try {
    await context.driver.destroy(network, operationContext(context))
  } catch (error) {
    throw operationNotAllowed(error instanceof Error ? error.message : String(error))
  }
  return ''
}

/** network.create: a network of the pool with no PIF, on the lab's create_internal_network (which picks its bridge). */
async function createNetwork(context: CallContext, args: XmlRpcStruct): Promise<string> {
  const pool = [...context.driver.objectsOfType('pool')][0]
  if (pool === undefined) throw operationNotAllowed('the lab has no pool')
  const raw = args['MTU']
  const mtu = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw
  if (mtu !== undefined && typeof mtu !== 'number') throw new XapiFailure('FIELD_TYPE_ERROR', 'MTU')
  const params = { name: text(args['name_label'] ?? ''), description: text(args['name_description'] ?? ''), ...(mtu === undefined ? {} : { mtu }) }
  try {
    return createdRef(context, await context.driver.perform(pool, 'create_internal_network', params, operationContext(context)))
  } catch (error) {
    throw failure(error, String(pool['_xapiRef']), 'pool')
  }
}

export const networkHandlers: Readonly<Record<string, Explicit>> = withAsync({
  'network.create': (context, [args]) => createNetwork(context, (args ?? {}) as XmlRpcStruct),
  'network.destroy': (context, [ref]) => destroyNetwork(context, text(ref)),
})
