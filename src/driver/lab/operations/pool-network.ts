import type { NetworkRecord } from '../../../model/records.js'
import { identity } from './builders.js'
import { networkDefaults } from '../record-defaults.js'
import { optionalInteger, optionalString, requiredString, type ActionHandler } from './params.js'
import { Run } from './run.js'

/** A network of the pool with no PIF: VMs on it reach only each other, on the same host. */
export const createInternalNetwork: ActionHandler = async (op, object, params) => {
  const name = requiredString(params, 'name')
  const description = optionalString(params, 'description') ?? ''
  const mtu = optionalInteger(params, 'mtu') ?? 1500
  const run = new Run(op, 1)
  const id = await run.apply((plan) => {
    const taken = new Set(plan.all('network').filter((network) => network.$pool === object.id).map((network) => network.bridge))
    let index = 0
    while (taken.has(`xapi${index}`)) index += 1
    return plan.add<NetworkRecord>({
      type: 'network',
      ...identity(object.id),
      name_label: name,
      name_description: description,
      tags: [],
      bridge: `xapi${index}`,
      MTU: mtu,
      ...networkDefaults(),
    }).id
  })
  return { id, type: 'network' }
}
