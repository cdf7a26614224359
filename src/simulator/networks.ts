import { labObject, operationContext, text, withAsync } from './actions.js'
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

export const networkHandlers: Readonly<Record<string, Explicit>> = withAsync({
  'network.destroy': (context, [ref]) => destroyNetwork(context, text(ref)),
})
