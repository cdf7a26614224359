import { basic, jsonBody, type TestServer } from './server.js'

export interface GrantedPrivilege {
  readonly resource: string
  readonly action: string
  readonly selector?: string
}

const PASSWORD = 'scoped-user-password'

/** A new non-administrator holding exactly these privileges (through a role of their own); `auth` is their Basic header. */
export async function scopedUser(server: TestServer, email: string, privileges: readonly GrantedPrivilege[]): Promise<{ id: string; auth: string }> {
  const user = await server.json<{ id: string }>('/rest/v0/users', jsonBody({ email, password: PASSWORD }))
  const role = await server.json<{ id: string }>('/rest/v0/acl-roles', jsonBody({ name: `${email} role` }))
  for (const privilege of privileges) {
    const made = await server.json('/rest/v0/acl-privileges', jsonBody({ roleId: role.body.id, effect: 'allow', ...privilege }))
    if (made.status !== 201) throw new Error(`cannot grant ${JSON.stringify(privilege)}: ${made.status} ${JSON.stringify(made.body)}`)
  }
  await server.request(`/rest/v0/acl-roles/${role.body.id}/users/${user.body.id}`, { method: 'PUT' })
  return { id: user.body.id, auth: basic(email, PASSWORD) }
}

/** The Basic header of a new user holding exactly these privileges. */
export const scopedAuth = async (...args: Parameters<typeof scopedUser>): Promise<string> => (await scopedUser(...args)).auth
