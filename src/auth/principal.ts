/** The authenticated caller of a request. */
export interface Principal {
  readonly id: string
  readonly email: string
  readonly permission: 'none' | 'admin'
  /** how the caller proved who they are */
  readonly via: 'token' | 'password'
}

export const isAdmin = (principal: Principal): boolean => principal.permission === 'admin'
