import type { XmlRpcStruct } from '../xapi/xml-rpc.js'
import { createdRef, failure, operationContext, text, withAsync } from './actions.js'
import type { Explicit } from './calls.js'
import type { CallContext } from './context.js'
import { operationNotAllowed, XapiFailure } from './failures.js'

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
})
