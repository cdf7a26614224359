/** A privilege from spec 2's catalogue: a resource and an action on it. */
export interface Privilege {
  readonly resource: string
  readonly action: string
}

/**
 * Who may call a route, declared beside it (and shown in the OpenAPI document).
 * - `public`: no credentials needed (docs, redirects).
 * - `authenticated`: any logged-in user.
 * - `self`: the caller whose id is in path parameter `param`; with `only`,
 *   administrators are held to it too (tokens are personal).
 * - `privilege`: administrators, and (with access control) holders of it.
 *   With `listing`, the route lists what the caller may read of the resource
 *   and never refuses: a caller who may read nothing gets an empty list.
 * A route with none of these is administrator-only.
 */
export interface Access {
  readonly public?: true
  readonly authenticated?: true
  readonly self?: { readonly param: string; readonly only?: true }
  readonly privilege?: Privilege
  readonly listing?: true
}
