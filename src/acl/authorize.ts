import { isAdmin, type Principal } from '../auth/principal.js'
import { KeelError, forbidden } from '../errors.js'
import type { Access } from './access.js'

/** Decides a route's access from its declaration and the caller; throws the refusal. */
export function authorize(access: Access, principal: Principal, params: Readonly<Record<string, string>>): void {
  if (access.authenticated) return
  if (access.self !== undefined) {
    if (params[access.self.param] === principal.id) return
    if (access.self.only) throw forbidden('this route only acts on your own account')
  }
  if (isAdmin(principal)) return
  if (access.privilege !== undefined) {
    throw new KeelError('NOT_ENOUGH_PRIVILEGES', 'not enough privileges', {
      missingPrivileges: [{ resource: access.privilege.resource, action: access.privilege.action }],
    })
  }
  throw forbidden()
}
