import { isAdmin, type Principal } from '../auth/principal.js'
import { forbidden } from '../errors.js'
import type { Access } from './access.js'
import { notEnoughPrivileges } from './check.js'

/**
 * Decides what a route's declaration alone can decide, before any data is
 * touched: self routes, administrator-only routes, and non-administrators
 * who hold no privilege that could allow the route's action on any object.
 * What depends on the object is checked where the object is resolved.
 */
export function authorize(access: Access, principal: Principal, params: Readonly<Record<string, string>>): void {
  if (access.authenticated) return
  if (access.self !== undefined) {
    if (params[access.self.param] === principal.id) return
    if (access.self.only) throw forbidden('this route only acts on your own account')
  }
  if (isAdmin(principal)) return
  const privilege = access.privilege
  if (privilege === undefined) throw forbidden()
  if (!access.listing && principal.privileges?.mayAllow(privilege.resource, privilege.action) !== true) {
    throw notEnoughPrivileges([{ resource: privilege.resource, action: privilege.action }])
  }
}
