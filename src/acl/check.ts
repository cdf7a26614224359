import { isAdmin, type Principal } from '../auth/principal.js'
import { KeelError } from '../errors.js'

export interface MissingPrivilege {
  readonly resource: string
  readonly action: string
  readonly objectId?: string
}

export const notEnoughPrivileges = (missingPrivileges: readonly MissingPrivilege[]): KeelError =>
  new KeelError('NOT_ENOUGH_PRIVILEGES', 'not enough privileges', { missingPrivileges })

/** Whether the caller may do `action` on the object (administrators may do everything). */
export function allows(principal: Principal, resource: string, action: string, object?: unknown): boolean {
  return isAdmin(principal) || principal.privileges?.allows(resource, action, object) === true
}

/** Throws the 403 naming what is missing unless the caller may do `action` on the object. */
export function requirePrivilege(principal: Principal, resource: string, action: string, object?: unknown, objectId?: string): void {
  if (!allows(principal, resource, action, object)) {
    throw notEnoughPrivileges([{ resource, action, ...(objectId === undefined ? {} : { objectId }) }])
  }
}

/** The records of a resource the caller may read, or undefined when they may read them all. */
export function readableBy(principal: Principal, resource: string | undefined): ((record: object) => boolean) | undefined {
  const privileges = principal.privileges
  if (isAdmin(principal) || resource === undefined || privileges === undefined) return undefined
  return privileges.predicate(resource, 'read')
}

/** A change of some fields needs `update:<field>` for each field sent; all are checked, all missing are named. */
export function requireUpdates(principal: Principal, resource: string, object: { readonly id: string }, fields: readonly string[]): void {
  const missing = fields.map((field) => `update:${field}`).filter((action) => !allows(principal, resource, action, object))
  if (missing.length > 0) throw notEnoughPrivileges(missing.map((action) => ({ resource, action, objectId: object.id })))
}
