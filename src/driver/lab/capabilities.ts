import { taggableTypes } from '../../model/operations.js'
import type { DriverCapabilities } from '../types.js'
import { deepFreeze } from './deep-freeze.js'
import { destroyers, type Destroyer } from './operations/destroy.js'
import { creators, type Creator } from './operations/devices.js'
import type { ActionHandler } from './operations/params.js'
import { actionHandlers } from './operations/perform.js'
import { settersByType, type Setters } from './operations/update.js'

/** What the lab can do, read off the tables that do it, so the declaration cannot drift from them. */
export const labCapabilities: DriverCapabilities = deepFreeze({
  actions: Object.fromEntries(Object.entries(actionHandlers).map(([type, handlers]) => [type, Object.keys(handlers)])),
  patch: Object.keys(settersByType),
  destroy: Object.keys(destroyers),
  // setTag takes every taggable type, and the compiler holds each to a lab type with tags.
  tags: [...taggableTypes],
  create: Object.keys(creators),
})

// Each lookup finds a handler for exactly what labCapabilities declares. Own
// keys only, so a type or action named like an Object.prototype member finds nothing.
const own = <T>(table: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined

export function actionHandler(type: string, action: string): ActionHandler | undefined {
  const ofType = own(actionHandlers, type)
  return ofType === undefined ? undefined : own(ofType, action)
}

export const settersOf = (type: string): Setters | undefined => own(settersByType, type)

export const destroyerOf = (type: string): Destroyer | undefined => own(destroyers, type)

export const creatorOf = (type: string): Creator | undefined => own(creators, type)
