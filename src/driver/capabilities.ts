import { KeelError } from '../errors.js'
import type { DriverCapabilities, XoRecord } from './types.js'

/** What the REST API knows how to offer (src/model/operations.ts), to hold a driver's declaration against. */
export interface Catalogue {
  readonly actionsByType: Readonly<Record<string, readonly { readonly name: string }[]>>
  readonly patchTypes: readonly string[]
  readonly deletableTypes: readonly string[]
  readonly taggableTypes: readonly string[]
  readonly creatableTypes: readonly string[]
}

/**
 * Fails start-up, listing every mismatch at once, when a driver declares an
 * action, PATCH, DELETE, tag or POST type the catalogue does not know: such a
 * declaration is a bug in the driver or the catalogue, better found before
 * serving than as a missing route. What the catalogue has and the driver
 * lacks is fine: those routes are simply not offered.
 */
export function checkCapabilities(capabilities: DriverCapabilities, catalogue: Catalogue): void {
  const mismatches: string[] = []
  for (const [type, actions] of Object.entries(capabilities.actions)) {
    const known = Object.hasOwn(catalogue.actionsByType, type) ? catalogue.actionsByType[type] : undefined
    if (known === undefined) {
      if (actions.length > 0) mismatches.push(`actions on ${type}: the catalogue has no actions for that type`)
      continue
    }
    for (const action of actions) {
      if (!known.some((spec) => spec.name === action)) mismatches.push(`action ${action} on ${type}: not in the catalogue`)
    }
  }
  const unknown = (what: string, declared: readonly string[], known: readonly string[]): void => {
    for (const type of declared) if (!known.includes(type)) mismatches.push(`${what} of ${type}: not in the catalogue`)
  }
  unknown('PATCH', capabilities.patch, catalogue.patchTypes)
  unknown('DELETE', capabilities.destroy, catalogue.deletableTypes)
  unknown('tags', capabilities.tags, catalogue.taggableTypes)
  unknown('POST', capabilities.create ?? [], catalogue.creatableTypes)
  if (mismatches.length > 0) {
    throw new Error(`the driver declares what the API catalogue does not know:\n- ${mismatches.join('\n- ')}`)
  }
}

/**
 * What a driver answers when asked for something its capabilities do not
 * declare (only a caller breaking the contract can): a 404, as for a
 * route that does not exist.
 */
export const notDeclared = (object: XoRecord, operation: string): KeelError =>
  new KeelError('NO_SUCH_OBJECT', `${object.type} ${object.id} has no ${operation}`, { id: object.id, type: object.type, operation })
