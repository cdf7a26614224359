import type { PrivilegeSet } from '../acl/evaluate.js'

/** The authenticated caller of a request. */
export interface Principal {
  readonly id: string
  readonly email: string
  readonly permission: 'none' | 'admin'
  /** how the caller proved who they are */
  readonly via: 'token' | 'password'
  /** a non-administrator's effective privileges, as of this request (set by the HTTP layer) */
  readonly privileges?: PrivilegeSet
}

export const isAdmin = (principal: Principal): boolean => principal.permission === 'admin'
